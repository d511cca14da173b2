//! What raplbench-interfere still imports from here: a row's meta and
//! status, which live in [`crate::row_meta`].

pub use crate::row_meta::{RowMeta, Status};
