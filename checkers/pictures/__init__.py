"""Pictures of a run (timeline, perf, plot pages), kept apart from the verdict checkers: they read a
stored run directory, never decide a verdict, and a failure in one never changes one."""
