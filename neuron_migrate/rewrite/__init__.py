"""The rewrite: the rule-driven libcst codemod, run over a tree, shown as a diff or written."""
