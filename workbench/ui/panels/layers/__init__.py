"""The Model dock's inside of the network: the layer table and each layer's curves and distributions (layers, views)."""
