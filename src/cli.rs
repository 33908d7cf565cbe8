//! Command-line entry point.

pub fn main() -> i32 {
    0
}
