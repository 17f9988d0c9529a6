"""``metadata.managedFields`` for non-apply writes, as kube-apiserver's field manager keeps them.

The package follows structured-merge-diff's parts, lowest first:

- ``fieldpath``: ``PathElement``, ``Path`` and ``FieldSet``, the set of field paths with its
  FieldsV1 encoding (the type server-side apply builds on);
- ``shape``: how each node of an object is seen, read from the schema;
- ``compare``: what a write changed (``compare``) and what an object sets (``field_set_of``);
- ``entries``: the managedFields entries (``decode_managed_fields``, ``encode_managed_fields``)
  and manager names (``manager_name``);
- ``update``: the Update pipeline of one create/update/patch (``update_managed_fields``).

Import names from their module; this file defines and re-exports nothing.
"""
