//! Running the pipeline: the resolved run (`context`: settings, provider,
//! agents, prices, the terminal's `Ui`), the error of a scan that gives
//! no report (`error`), the skeptic stage (it reads and writes the run
//! store and draws progress), the steps between the stages that `scan`
//! and `merge` call (`steps`), `fanscan ask`'s lead, and writing the
//! outputs (`publish`).
//!
//! Takes settings; gives reports and answers. The top of the library:
//! nothing below imports it.

pub(crate) mod ask;
pub(crate) mod context;
pub(crate) mod error;
pub(crate) mod publish;
pub(crate) mod skeptic;
pub(crate) mod steps;
