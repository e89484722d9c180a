"""lm-eval model classes shipped by the plugin (registered lazily by name)."""
