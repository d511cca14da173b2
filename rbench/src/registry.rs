//! The sampler mechanisms of the suite's registry, read from the one place
//! they are written: results/schema.json's `$defs.mechanism` (each entry's
//! `const` name and its `x-in-kernel` flag), built into the binaries.
//! results/registry.py reads the same entries for Python; the command
//! lines of raplbench-sample and raplbench-interfere offer exactly these.

use serde_json::Value;
use std::sync::OnceLock;

/// results/schema.json, the judge of every row and the registry, built in
/// and parsed once.
pub fn schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    let text = include_str!("../../results/schema.json");
    SCHEMA.get_or_init(|| serde_json::from_str(text).expect("results/schema.json is JSON"))
}

/// The registered paths (`$defs.path`) that `harness` ("gbench",
/// "criterion", "victim") times, in the registry's order.
pub fn paths_of(harness: &str) -> Vec<&'static str> {
    schema()["$defs"]["path"]["oneOf"]
        .as_array()
        .expect("results/schema.json has $defs.path.oneOf")
        .iter()
        .filter(|p| {
            p["x-harnesses"]
                .as_array()
                .is_some_and(|hs| hs.iter().any(|h| h == harness))
        })
        .map(|p| p["const"].as_str().expect("a path's const"))
        .collect()
}

/// One registered mechanism.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mechanism {
    /// Its name: `--mechanism NAME`, the op of its rows.
    pub name: String,
    /// What one tick reads (the registry's title).
    pub title: String,
    /// Whether it ticks in the kernel (a bpf_timer, a module's hrtimer):
    /// there is no user-space sampling thread to place.
    pub in_kernel: bool,
}

/// Every registered mechanism, in the registry's order.
pub fn mechanisms() -> &'static [Mechanism] {
    static ALL: OnceLock<Vec<Mechanism>> = OnceLock::new();
    ALL.get_or_init(|| {
        schema()["$defs"]["mechanism"]["oneOf"]
            .as_array()
            .expect("results/schema.json has $defs.mechanism.oneOf")
            .iter()
            .map(|m| Mechanism {
                name: m["const"].as_str().expect("a mechanism's const").into(),
                title: m["title"].as_str().expect("a mechanism's title").into(),
                in_kernel: m["x-in-kernel"]
                    .as_bool()
                    .expect("a mechanism's x-in-kernel"),
            })
            .collect()
    })
}

/// The names of every registered mechanism, in order.
pub fn mechanism_names() -> Vec<&'static str> {
    mechanisms().iter().map(|m| m.name.as_str()).collect()
}

/// The registered mechanisms as a command line's values, each with its
/// title as help.
pub fn mechanism_values() -> Vec<clap::builder::PossibleValue> {
    mechanisms()
        .iter()
        .map(|m| clap::builder::PossibleValue::new(m.name.as_str()).help(m.title.as_str()))
        .collect()
}

/// Whether the registered mechanism `name` ticks in the kernel (false for
/// an unknown name).
pub fn in_kernel(name: &str) -> bool {
    mechanisms().iter().any(|m| m.name == name && m.in_kernel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_has_a_name_and_its_flag() {
        let all = mechanisms();
        assert!(!all.is_empty());
        let mut names = mechanism_names();
        names.dedup();
        assert_eq!(names.len(), all.len(), "each name once");
        for m in all {
            assert_eq!(in_kernel(&m.name), m.in_kernel, "{}", m.name);
        }
        assert!(!in_kernel("no such mechanism"));
    }
}
