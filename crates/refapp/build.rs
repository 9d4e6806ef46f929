//! Record the git revision for `GET /version`. Never fails the build: without
//! git (or outside a repository) the revision is "unknown".

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    let revision = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=FIRSTTOKEN_REFAPP_GIT_REVISION={revision}");

    // Rebuild when HEAD moves: watch HEAD, the branch it points to and
    // packed-refs (in a worktree, refs live in the common git dir). Only
    // existing paths are listed, since a missing one would rerun every build.
    let mut watch: Vec<PathBuf> = vec![PathBuf::from("build.rs")];
    if let (Some(git_dir), Some(common)) = (
        git(&["rev-parse", "--git-dir"]),
        git(&["rev-parse", "--git-common-dir"]),
    ) {
        let (git_dir, common) = (PathBuf::from(git_dir), PathBuf::from(common));
        let head = git_dir.join("HEAD");
        if let Ok(text) = std::fs::read_to_string(&head)
            && let Some(r) = text.trim().strip_prefix("ref: ")
        {
            watch.push(common.join(r));
        }
        watch.push(head);
        watch.push(common.join("packed-refs"));
    }
    for p in watch.iter().filter(|p| Path::new(p).exists()) {
        println!("cargo:rerun-if-changed={}", p.display());
    }
}
