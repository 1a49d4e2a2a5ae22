//! Talking to models: the conversation every layer shares (messages,
//! requests, usage, tool specs), the providers (one per wire format, the
//! offline engine's seam, the HTTP layer with its retries and rate
//! limits), token counting, prices, the run's budget, its control
//! (wind-down, cancel, time limit) and the agents' events.
//!
//! Takes settings and requests; gives answers, usage and spend. Imports
//! nothing of the crate but `util`.

pub(crate) mod budget;
pub(crate) mod control;
pub(crate) mod conversation;
pub(crate) mod events;
pub(crate) mod prices;
pub(crate) mod providers;
pub(crate) mod tokens;
