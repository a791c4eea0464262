//! Terminal text of the commands' results: one module per kind of result, all laid out with the
//! one [`table::Table`] and the one number format family of [`number`].

pub mod compare;
pub mod number;
pub mod run;
pub mod study;
pub mod table;
