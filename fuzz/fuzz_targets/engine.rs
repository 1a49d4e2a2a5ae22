#![no_main]

use std::sync::LazyLock;

// The rules compile once; each input is one file.
static ENGINE: LazyLock<fanscan::fuzzing::Engine> = LazyLock::new(Default::default);

libfuzzer_sys::fuzz_target!(|data: &[u8]| ENGINE.check(data));
