//! The shape CONTRIBUTING.md asks of the code, held: `scripts/house` finds no function over 80
//! lines, no import chain between the top-level modules over 10, no circle among them and no
//! import of a module `src/lib.rs` declares after its importer; and it does find each when one
//! is there.

use std::path::Path;
use std::process::Command;

use crate::common::repo;

fn house(root: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(root.join("scripts/house"))
        .args(args)
        .output()
        .expect("scripts/house runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn the_code_keeps_the_shape_contributing_asks_for() {
    let (ok, report) = house(repo(), &[]);
    assert!(ok, "{report}");
    assert!(report.contains("functions over 80 lines: 0"), "{report}");
    assert!(report.contains("import circles: 0"), "{report}");
    assert!(
        report.contains("imports of a module declared later in src/lib.rs: 0"),
        "{report}"
    );
}

#[test]
fn a_long_function_a_deep_chain_and_a_circle_are_each_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("b")).unwrap();
    std::fs::create_dir_all(dir.path().join("scripts")).unwrap();
    std::fs::copy(
        repo().join("scripts/house"),
        dir.path().join("scripts/house"),
    )
    .unwrap();
    // a -> b -> c -> a, and a function of 4 lines whose braces in strings do not count.
    std::fs::write(
        src.join("a.rs"),
        "use crate::b::x;\npub fn f() {\n    let s = \"}}}\";\n    let t = r#\"{\"#;\n}\n",
    )
    .unwrap();
    std::fs::write(src.join("b/mod.rs"), "pub fn x() { crate::c::y() }\n").unwrap();
    std::fs::write(src.join("c.rs"), "pub fn y() { crate::a::f() }\n").unwrap();
    // Declared from the ground floor up as c, b, a: only c's import of a runs upward.
    std::fs::write(src.join("lib.rs"), "pub mod c;\n\npub mod b;\npub mod a;\n").unwrap();
    let (ok, report) = house(dir.path(), &["--lines", "3", "--depth", "2"]);
    assert!(!ok, "{report}");
    assert!(report.contains("functions over 3 lines: 1"), "{report}");
    assert!(report.contains("   4 src/a.rs:2 f"), "{report}");
    assert!(
        report.contains("longest import chain: 3\n  a -> b -> c"),
        "{report}"
    );
    assert!(report.contains("import circles: 1\n  a, b, c"), "{report}");
    assert!(
        report.contains("imports of a module declared later in src/lib.rs: 1\n  c -> a\n"),
        "{report}"
    );
    let (ok, report) = house(dir.path(), &["--lines", "4", "--depth", "3"]);
    assert!(!ok, "the circle is still there: {report}");
    assert!(report.contains("functions over 4 lines: 0"), "{report}");
}
