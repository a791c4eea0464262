//! Terminal text of the commands' results: one module per kind of result, all laid out with the
//! one [`table::Table`] and the one number format family of [`number`].

pub mod beff_io;
pub mod compare;
pub mod darshan;
pub mod monitor;
pub mod number;
pub mod quick;
pub mod repeat;
pub mod run;
pub mod saturate;
pub mod study;
pub mod sweep;
pub mod table;
pub mod trace;
pub mod validate;
pub mod write_modes;
