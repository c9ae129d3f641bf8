//! # udt-lab: the experiments run on the udt-sim simulator
//!
//! The thesis' experiments (Yunhong Gu 2005, chapter 4), a random sweep nobody tuned on, and
//! the seed papers' comparisons of RBUDP, Tsunami, FOBS, UDT and TCP, each built from
//! [`udt_sim`]'s engine, hosts, topologies and measures; their tables, JSON and plots. The
//! crate's README lists the scenarios and our numbers next to the thesis'.
//!
//! * [`scenario`]: the named experiments of the thesis and free-form runs on a dumbbell;
//! * [`report`], [`plot`]: a scenario's rows of measures as a table or JSON, and throughput
//!   over time as SVG;
//! * [`sweep`]: random scenarios drawn from a seed, and the distribution of each measure;
//! * [`seeds`], [`seeds_plot`]: the seed papers' experiments (transfers timed to their last
//!   byte, [`udt_sim::transfer`]) and their plots.
//!
//! Determinism: every experiment is a list of independent simulations, each a function of its
//! description and seed, so running them in parallel changes nothing but the wall time;
//! `UDT_SIM_SEED` overrides the seed of the tests and examples
//! ([`udt_sim::rng::seed_from_env`]).

#![forbid(unsafe_code)]

pub mod plot;
pub mod report;
pub mod scenario;
pub mod seeds;
pub mod seeds_plot;
pub mod sweep;
