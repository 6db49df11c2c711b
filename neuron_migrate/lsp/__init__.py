"""`neuron-migrate lsp`: the scan and the rewrite in an editor, over the Language Server Protocol.

`analysis` gives a buffer's findings and its migrated text through the same functions the scan
and the rewrite run on a file; `edits` turns a rewrite into the smallest text edits; `protocol`
speaks of both in LSP terms; `server` is the pygls server that holds the open buffers. Only
`server` and `protocol` import pygls and lsprotocol (the `lsp` extra).
"""
