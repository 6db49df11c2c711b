"""What a scan or rewrite reads: the files of a project, their text, notebooks and configuration."""
