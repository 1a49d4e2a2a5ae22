#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fanscan::fuzzing::model_answer(data));
