"""codenav watcher: sees file changes in registered repositories and asks for reconciles."""
