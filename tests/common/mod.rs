//! The fixtures shared by the integration tests (`tests/it`) and the
//! benches: temporary repositories, an in-process mock model server on
//! 127.0.0.1 (with a front that can hold requests), and running fanscan.
//! Each includes this directory with `#[path]`; a bench uses only part.

pub mod batch;
pub mod hold;
pub mod model;
pub mod repo;
pub mod run;

pub use model::*;
pub use repo::*;
pub use run::*;
