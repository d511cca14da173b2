//! What a neighbour's reads cost another CPU (issue 16), measured with the
//! victim probe ([`crate::victim`]): the library of the
//! `raplbench-interfere` binary.
//!
//! An **experiment** is one neighbour (a route of the Criterion plan read
//! at a rate or flat out, or a `raplbench-sample` process) against one
//! victim CPU. The victim loop runs on its own pinned thread and cuts
//! windows by TSC deadline; the neighbour follows the same grid and reads
//! only in the "on" windows, stays idle (its reader still open) in the
//! "off" ones. The experiment is a number of pairs of adjacent windows,
//! off-on and on-off alternating, after one settle window that is
//! discarded; each pair gives one figure (stolen time on, less the off
//! window's at the same rate, per read).
//!
//! - [`schedule`]: the windows' roles, the pairs' order, the grid, the
//!   sampler's window-by-window schedule.
//! - [`placement`]: which CPU the victim takes.
//! - [`victim_side`]: calibration once per victim CPU, the victim thread,
//!   its windows by grid window.
//! - [`reader`]: the route neighbour's loop (flat out, or on absolute
//!   deadlines at a rate).
//! - [`route`]: the route experiments over the plan.
//! - [`sampler`]: the sampler experiments (a child process).
//! - [`ticks`]: the sampler's ticks in a window, from its CSV; TSC to
//!   CLOCK_MONOTONIC.
//! - [`report`]: the JSON document and the line per experiment.

pub mod placement;
pub mod reader;
pub mod report;
pub mod route;
pub mod sampler;
pub mod schedule;
pub mod ticks;
pub mod victim_side;
