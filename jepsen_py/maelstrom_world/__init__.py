"""`--backend maelstrom`: the world of the house where the nodes are a user's program in any language
(jepsen_py/maelstrom/'s router is their network), run by the one runner like every other world."""
