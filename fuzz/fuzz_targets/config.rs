#![no_main]

use std::sync::LazyLock;

// Where each input is written as `fanscan.toml`.
static DIR: LazyLock<tempfile::TempDir> = LazyLock::new(|| tempfile::tempdir().unwrap());

libfuzzer_sys::fuzz_target!(|data: &[u8]| fanscan::fuzzing::config(DIR.path(), data));
