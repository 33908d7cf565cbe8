//! Container images the runner builds itself.

pub mod scratch;
