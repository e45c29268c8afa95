"""fastvec's bundled PPO trainer: `fastvec-train ENV` (cli.py). The algorithm lives once as NumPy math
(reference.py) and runs on the CPU via numpy_trainer.py; configs, checkpoints and logs are shared by
every device. Importing this package is cheap: the trainer modules load on use."""
