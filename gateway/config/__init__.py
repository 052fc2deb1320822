"""Settings: the one frozen Settings from flags and MNS_GATEWAY_* (settings), and the data dir
(data_dir)."""
