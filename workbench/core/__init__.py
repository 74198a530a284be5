"""The Qt-free core: config, data, model, engine, inspection, checkpoints. Never imports Qt."""
