//! Terminal text of the commands' results: one module per kind of result.

pub mod study;
