//! The processor features Hark's offline engines are built for, checked before they run.
//!
//! whisper.cpp (inside the app) and llama.cpp (inside `hark-llm`) are compiled for ggml's
//! portable x86-64 baseline (`GGML_NATIVE=OFF`, scripts/build-env.sh): SSE4.2, AVX, AVX2,
//! BMI2, FMA and F16C, fixed at build time. On a processor without one of them, the first
//! computation ends the process with an illegal instruction and no message. Choosing the
//! code at run time (ggml's `GGML_BACKEND_DL` with `GGML_CPU_ALL_VARIANTS`) is not possible
//! with whisper-rs-sys 0.15: it builds ggml as static libraries (`BUILD_SHARED_LIBS=OFF`,
//! its build.rs, not overridable from the environment) and links `ggml-cpu` by name, while
//! ggml requires shared libraries for loadable backends (ggml/src/CMakeLists.txt: "GGML_BACKEND_DL
//! requires BUILD_SHARED_LIBS"). So Hark checks the processor first and says what to do.
//! Apple silicon and aarch64 Linux builds use the architecture's baseline: nothing to check.

use crate::provider::{ErrorKind, ProviderError};

/// The x86-64 features the offline engines are compiled to use (ggml/CMakeLists.txt: the
/// options `INS_ENB` turns on when `GGML_NATIVE` is off), as `is_x86_feature_detected!`
/// names them.
pub const X86_64_BASELINE: &[&str] = &["sse4.2", "avx", "avx2", "bmi2", "fma", "f16c"];

/// The features of `required` that `has` says the processor lacks, in order.
pub fn missing<'a>(required: &[&'a str], has: &dyn Fn(&str) -> bool) -> Vec<&'a str> {
    required.iter().copied().filter(|f| !has(f)).collect()
}

/// Whether this processor has an x86-64 feature (`None`: a name this does not know).
#[cfg(target_arch = "x86_64")]
fn detected(feature: &str) -> Option<bool> {
    Some(match feature {
        "sse4.2" => std::arch::is_x86_feature_detected!("sse4.2"),
        "avx" => std::arch::is_x86_feature_detected!("avx"),
        "avx2" => std::arch::is_x86_feature_detected!("avx2"),
        "bmi2" => std::arch::is_x86_feature_detected!("bmi2"),
        "fma" => std::arch::is_x86_feature_detected!("fma"),
        "f16c" => std::arch::is_x86_feature_detected!("f16c"),
        _ => return None,
    })
}

/// What this processor lacks of the offline engines' baseline; empty when nothing (and
/// always off x86-64).
pub fn missing_here() -> Vec<&'static str> {
    #[cfg(target_arch = "x86_64")]
    {
        missing(X86_64_BASELINE, &|f| detected(f).unwrap_or(false))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Vec::new()
    }
}

/// The error for a processor that lacks `lacking`, as `provider` reports it.
pub fn unsupported(provider: &'static str, lacking: &[&str]) -> ProviderError {
    ProviderError::new(
        provider,
        ErrorKind::LocalEngine,
        format!(
            "this computer's processor lacks {} (x86-64 instructions Hark's offline engines are \
             built for), so they cannot run here: choose a cloud model and cloud speech-to-text \
             in Settings, or build Hark on this computer with GGML_NATIVE=ON",
            lacking.join(", ").to_uppercase()
        ),
    )
}

/// Ok when the offline engines can run on this processor; else the error that says why and
/// what to do, instead of an illegal instruction later.
pub fn offline_engines_supported(provider: &'static str) -> Result<(), ProviderError> {
    let lacking = missing_here();
    if lacking.is_empty() {
        Ok(())
    } else {
        Err(unsupported(provider, &lacking))
    }
}

/// The calling thread (and the threads it starts: whisper.cpp's workers inherit it)
/// runs at the lowest priority: background work (whisper's warm-up, the memory's
/// indexing) gives way to a turn. Written here, not with a crate: it is one call per OS,
/// and a thread-priority crate's Windows path would not reach whisper.cpp's own workers
/// either (a new thread on Windows starts at normal priority), which one thread avoids.
pub fn lower_this_threads_priority() {
    // SAFETY: plain calls on the calling thread with constant arguments.
    #[cfg(target_os = "linux")]
    unsafe {
        // On Linux the nice value is per thread: `who = 0` is the calling thread.
        libc::setpriority(libc::PRIO_PROCESS, 0, 19);
    }
    #[cfg(target_os = "macos")]
    unsafe {
        libc::setpriority(libc::PRIO_DARWIN_THREAD, 0, 1); // 1: background
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 22: a processor without AVX2 stopped Hark with an illegal instruction; now the
    /// missing feature is named, with the way on.
    #[test]
    fn a_processor_without_avx2_gets_words_instead_of_an_illegal_instruction() {
        let old_cpu = |f: &str| !matches!(f, "avx2" | "fma" | "bmi2");
        let lacking = missing(X86_64_BASELINE, &old_cpu);
        assert_eq!(lacking, ["avx2", "bmi2", "fma"]);
        let e = unsupported("whisper", &lacking);
        assert_eq!(e.kind, ErrorKind::LocalEngine);
        assert!(e.message.contains("AVX2, BMI2, FMA"), "{}", e.message);
        assert!(e.message.contains("cloud"), "the way on: {}", e.message);
        assert!(missing(X86_64_BASELINE, &|_| true).is_empty());
    }

    /// Every feature of the baseline is one the detection knows (a misspelt name would
    /// read as missing on every computer).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_baseline_feature_is_detected_by_name() {
        for f in X86_64_BASELINE {
            assert!(detected(f).is_some(), "{f}");
        }
        assert_eq!(detected("avx512f-typo"), None);
    }
}
