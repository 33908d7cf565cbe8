//! The workload image: this very executable, packaged FROM scratch so it can run on a scenario's
//! network and reach services by their in-network names (e.g. `broker:9092`).

use std::collections::BTreeMap;
use std::hash::Hasher;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result};

use super::scratch::{self, ScratchFile};
use crate::world::engine::Engine;

/// Repository of workload images; the tag is a hash of the executable's contents, so a changed
/// binary gets a new image and two builds (say a base and a head) can coexist.
pub(crate) const REPOSITORY: &str = "perf-tests/workload";

/// Where the executable sits in the workload image (its entrypoint).
pub(crate) const IMAGE_PATH: &str = "/usr/local/bin/perf-tests";

fn content_hash(exe: &Path) -> Result<String> {
    let mut f = std::fs::File::open(exe).with_context(|| format!("reading {}", exe.display()))?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.write(&buf[..n]);
    }
    Ok(format!("{:016x}", h.finish()))
}

/// Removes the workload images of executables other than the running one; an image a
/// container still uses is kept. Returns how many were removed.
pub(crate) async fn remove_stale(engine: &Engine) -> Result<usize> {
    let exe = std::env::current_exe().context("locating the perf-tests executable")?;
    let current = format!("{REPOSITORY}:{}", content_hash(&exe)?);
    let mut removed = 0;
    let tags = engine
        .image_tags(REPOSITORY)
        .await
        .context("listing workload images")?;
    for tag in tags.iter().filter(|t| **t != current) {
        if engine.remove_image(tag).await.is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}

/// The workload image for the running executable, built when missing.
pub(crate) async fn ensure(engine: &Engine) -> Result<String> {
    let exe = std::env::current_exe().context("locating the perf-tests executable")?;
    ensure_for(engine, &exe).await
}

/// The workload image for `exe`, built when missing.
pub async fn ensure_for(engine: &Engine, exe: &Path) -> Result<String> {
    let tag = format!("{REPOSITORY}:{}", content_hash(exe)?);
    if engine.image_labels(&tag).await?.is_some() {
        return Ok(tag);
    }
    let labels = BTreeMap::from([(
        super::recipe::RECIPE_LABEL.to_string(),
        "perf-tests workload".to_string(),
    )]);
    scratch::build_scratch_image(
        engine,
        &tag,
        &[ScratchFile::new(exe, IMAGE_PATH)],
        vec![IMAGE_PATH.to_string()],
        labels,
    )
    .await
    .with_context(|| format!("packaging {} as {tag}", exe.display()))?;
    Ok(tag)
}
