/* Broken on purpose: a valid shared library that exports no
 * axle_hal_plugin_entry, like a stray .so in a plugin directory. */
__attribute__((visibility("default"))) int fake_no_entry_marker(void) { return 42; }
