//! Path "uinsn": single user-space instructions, timed by ubench alone
//! (ubench/paths/uinsn.cc holds the instructions and their timed loops);
//! the plan lists them, on the first CPU this process may run on, so that
//! ubench times exactly the plan's rows.

use serde_json::json;

use crate::cpu::Placement;
use crate::plan::{meta, ForOthers, Machine, Plan, Planned};

/// The instructions, each one op: ubench knows each by this name.
pub const INSTRUCTIONS: &[&str] = &["nop", "mov", "cpuid:0x0", "cpuid:0x1", "rdtsc", "rdtscp"];

/// The rows of path "uinsn" on `machine`.
pub fn plan(machine: &Machine, plan: &mut Plan) {
    let cpu = machine.cpus().allowed().first().copied().unwrap_or(0);
    let placement = Placement {
        cpu,
        target_cpu: Some(cpu),
    };
    for &insn in INSTRUCTIONS {
        let meta = meta("uinsn", insn, None, Some(placement), None, None);
        plan.rows
            .push(Planned::run(meta, ForOthers(json!({"insn": insn}))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roots::Roots;
    use std::time::Duration;

    #[test]
    fn every_instruction_is_a_row_on_one_cpu_that_names_it() {
        let machine = Machine::new(Roots::from_env(), Duration::ZERO);
        let mut plan = Plan::default();
        super::plan(&machine, &mut plan);
        let ops: Vec<&str> = plan.rows.iter().map(|r| r.meta.op.as_str()).collect();
        assert_eq!(ops, INSTRUCTIONS);
        for row in &plan.rows {
            assert_eq!(row.meta.cpu, row.meta.target_cpu);
            let spec = row.reads.as_ref().unwrap().spec();
            assert_eq!(spec, json!({"insn": row.meta.op}));
        }
    }
}
