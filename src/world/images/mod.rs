//! Container images the runner builds itself: recipes for the suites, the workload image, and
//! the scratch packager both use.

pub mod build;
pub mod contract;
pub mod go;
pub mod maven;
pub mod recipe;
pub mod scratch;
pub mod workload;
