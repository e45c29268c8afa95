"""The standard faces of fastvec's native environments (Gymnasium, PettingZoo, adapters)."""
