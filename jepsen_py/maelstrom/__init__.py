"""Nodes in any language through Maelstrom's protocol: the wire format, each node's process and the
router that is their network (what runs them as a backend's world is jepsen_py/maelstrom_world/)."""
