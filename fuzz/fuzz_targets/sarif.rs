#![no_main]

use std::sync::LazyLock;

// The repository the leads point into: its paths are read, never its files.
static ROOT: LazyLock<tempfile::TempDir> = LazyLock::new(|| tempfile::tempdir().unwrap());

libfuzzer_sys::fuzz_target!(|data: &[u8]| fanscan::fuzzing::sarif(ROOT.path(), data));
