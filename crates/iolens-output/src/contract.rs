//! The contract between a command's result and the JSON document it becomes: what a result
//! tells the envelope about how the command went ([`Body`]), and the warnings and errors it
//! carries ([`Notice`]). It lives here, below every crate that produces results (suites,
//! analysis, MPI), so that they can state it without depending on the crate that presents
//! them (`iolens-report`, which builds the envelope and re-exports these at
//! `iolens_report::envelope`).

use serde::{Deserialize, Serialize};

/// A warning or an error: a stable snake_case code for programs, a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notice {
    pub code: String,
    pub message: String,
}

impl Notice {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Notice {
        Notice { code: code.into(), message: message.into() }
    }
}

/// What a command's result tells the envelope about how the command went.
pub trait Body: Serialize {
    fn interrupted(&self) -> bool {
        false
    }
    fn warnings(&self) -> Vec<Notice> {
        Vec::new()
    }
    fn error(&self) -> Option<Notice> {
        None
    }
}

/// A result without a body of its own: the error document.
#[derive(Debug, Serialize)]
pub struct NoBody {}

impl Body for NoBody {}

impl<B: Body> Body for &B {
    fn interrupted(&self) -> bool {
        (*self).interrupted()
    }
    fn warnings(&self) -> Vec<Notice> {
        (*self).warnings()
    }
    fn error(&self) -> Option<Notice> {
        (*self).error()
    }
}
