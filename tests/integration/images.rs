//! Image recipes on the real engine: a Debian package's program packaged into an image that
//! runs, is not rebuilt while up to date and is rebuilt when forced; `clean --images` removes the
//! workload images of other builds and keeps this build's.

use crate::common;
use common::engine_lock;

use std::path::{Path, PathBuf};
use std::time::Duration;

use perf_tests::world::engine::OneOff;
use perf_tests::world::images::recipe::{self, DebianRecipe, ImageRecipe, Outcome, Recipe};

fn run_id(test: &str) -> String {
    format!("test-{test}-{}", std::process::id())
}

#[tokio::test(flavor = "multi_thread")]
async fn debian_recipe_builds_runs_and_is_not_rebuilt() {
    let _lock = engine_lock(false);
    let engine = common::engine(&run_id("recipe")).await;
    let image = format!("perf-tests-test/recipe-env:{}", std::process::id());
    let r = ImageRecipe {
        image: image.clone(),
        recipe: Recipe::Debian(DebianRecipe {
            package: "coreutils".into(),
            bin: PathBuf::from("/usr/bin/env"),
        }),
    };
    assert_eq!(
        recipe::ensure(&engine, &r, false).await.unwrap(),
        Outcome::Built
    );
    let started = std::time::Instant::now();
    assert_eq!(
        recipe::ensure(&engine, &r, false).await.unwrap(),
        Outcome::UpToDate
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "warm check is quick"
    );

    let out = engine
        .run_oneoff(
            OneOff {
                image: image.clone(),
                cmd: vec!["PROBE=from-scratch".into()],
                name_hint: "recipe".into(),
                ..Default::default()
            },
            |_| {},
        )
        .await
        .unwrap();
    assert_eq!(out.exit_code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("PROBE=from-scratch"), "{}", out.stdout);

    assert_eq!(
        recipe::ensure(&engine, &r, true).await.unwrap(),
        Outcome::Built,
        "forced"
    );
    common::docker()
        .remove_image(
            &image,
            None::<bollard::query_parameters::RemoveImageOptions>,
            None,
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn clean_images_removes_other_builds_workload_images_only() {
    // Exclusive: `clean` also removes the managed containers of runs no longer alive.
    let _lock = engine_lock(true);
    let engine = common::engine(&run_id("clean-images")).await;
    // Any other executable stands in for an older build of perf-tests.
    let stale = perf_tests::world::images::workload::ensure_for(&engine, Path::new("/usr/bin/env"))
        .await
        .unwrap();
    let current = perf_tests::world::images::workload::ensure_for(
        &engine,
        Path::new(env!("CARGO_BIN_EXE_perf-tests")),
    )
    .await
    .unwrap();
    let out = common::bin().args(["clean", "--images"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("workload images of other builds"),
        "{stderr}"
    );
    assert!(
        engine.image_labels(&stale).await.unwrap().is_none(),
        "{stale} is still there"
    );
    assert!(
        engine.image_labels(&current).await.unwrap().is_some(),
        "{current} was removed"
    );
}
