"""Link options that put Debian's static Abseil archives into one binary.

//third_party:absl links the shared libabsl_*.so (59 of them). A command-line
binary started many times (`hurray`) pays for each at start-up: ld.so maps
every library and looks every symbol up through all of them (issue 47 item
3: a 16-byte convert took 44 ms against cp's 6 ms). In a cc_binary's
`linkopts`, these come before its dependencies' `-l` flags: the archives
(Debian builds them as PIE objects, fine for an executable but not for a
shared library) resolve every Abseil symbol first, and `--as-needed` then
keeps out of DT_NEEDED each shared library nothing refers to any more (the
libabsl_*.so, libhwy_contrib). The list is //third_party:absl's, each once.
"""

ABSL_STATIC_LINKOPTS = ["-Wl,--start-group"] + [
    "-l:lib%s.a" % name
    for name in [
        "absl_statusor",
        "absl_status",
        "absl_strerror",
        "absl_random_distributions",
        "absl_throw_delegate",
        "absl_raw_logging_internal",
        "absl_random_seed_sequences",
        "absl_random_internal_pool_urbg",
        "absl_random_internal_randen",
        "absl_random_internal_randen_hwaes",
        "absl_random_internal_randen_hwaes_impl",
        "absl_random_internal_randen_slow",
        "absl_random_internal_platform",
        "absl_random_internal_seed_material",
        "absl_random_seed_gen_exception",
        "absl_failure_signal_handler",
        "absl_examine_stack",
        "absl_leak_check",
        "absl_flags_parse",
        "absl_flags_usage",
        "absl_flags_usage_internal",
        "absl_flags_internal",
        "absl_flags_marshalling",
        "absl_str_format_internal",
        "absl_flags_reflection",
        "absl_flags_private_handle_accessor",
        "absl_flags_commandlineflag",
        "absl_flags_commandlineflag_internal",
        "absl_flags_config",
        "absl_flags_program_name",
        "absl_cord",
        "absl_cordz_info",
        "absl_cord_internal",
        "absl_cordz_functions",
        "absl_cordz_handle",
        "absl_hash",
        "absl_city",
        "absl_bad_variant_access",
        "absl_low_level_hash",
        "absl_raw_hash_set",
        "absl_bad_optional_access",
        "absl_hashtablez_sampler",
        "absl_exponential_biased",
        "absl_synchronization",
        "absl_graphcycles_internal",
        "absl_stacktrace",
        "absl_symbolize",
        "absl_debugging_internal",
        "absl_demangle_internal",
        "absl_malloc_internal",
        "absl_time",
        "absl_civil_time",
        "absl_strings",
        "absl_strings_internal",
        "absl_base",
        "absl_spinlock_wait",
        "absl_int128",
        "absl_log_severity",
        "absl_time_zone",
    ]
] + ["-Wl,--end-group", "-Wl,--as-needed"]
