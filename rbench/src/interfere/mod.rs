//! What a neighbour's reads cost another CPU (issue 16), measured with the
//! victim probe ([`crate::victim`]): the library of the
//! `raplbench-interfere` binary.
//!
//! An **experiment** is one neighbour (a route of the Criterion plan read
//! at a rate or flat out, or a `raplbench-sample` process) against one
//! victim CPU: pairs of adjacent windows on the victim's grid, the
//! neighbour reading in the "on" one, idle in the "off" one; each pair
//! gives one figure (stolen time on, less the off window's, per read).
//! Placement, windows, the JSON and what each module holds:
//! rbench/README.md, "raplbench-interfere".

pub mod placement;
pub mod reader;
pub mod report;
pub mod route;
pub mod sampler;
pub mod schedule;
pub mod ticks;
pub mod victim_side;
