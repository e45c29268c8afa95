"""Mutation testing before a release: one small bug at a time in a snapshot clone (Python through cosmic-ray's
operators, C headers through the token mutator below), each run against its file's fast CPU tests under a time
limit; a mutant the tests do not fail on survived. Usage and the current report: docs/testing.md.

    python tools/mutation.py                    # the release campaign: a seeded sample per file
    python tools/mutation.py --per-file 0       # every mutant of every file (hours)
    python tools/mutation.py --files fastvec/native/pong.h --per-file 10 --jobs 1
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import contextlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EQUIVALENT_FILE = REPO / "tools" / "mutation_equivalent.toml"

# Each mutated file and the fast tests that stand guard over it (pytest arguments, run in the clone).
_NOT_SLOW = "not compiles_for_the_gpu and not env_sources_compile_as_cuda and not learns and not cleanrl"
_CONTRACTS = "tests/wrappers/test_wrapper_contracts.py"
_ADAPTER_TESTS = ["tests/wrappers/test_integrations.py", "tests/wrappers/test_env_inputs.py", _CONTRACTS,
                  "-k", _NOT_SLOW + " and not rllib and not record_video"]
TARGETS: dict[str, list[str]] = {
    "fastvec/trainer/reference.py": ["tests/trainer/test_reference.py", "tests/trainer/test_bookkeeping.py",
                                     "tests/trainer/test_counter_streams.py", "tests/trainer/test_optimizer_math.py",
                                     "tests/trainer/test_policy_spec_checks.py", "tests/trainer/test_spec_widths.py",
                                     "tests/trainer/test_reference_heads.py", "tests/trainer/test_vtrace_defaults.py",
                                     "tests/trainer/test_masked_uniform_floor.py"],
    "fastvec/trainer/numpy_trainer.py": ["tests/trainer/test_rollout_and_checkpoint_edges.py",
                                         "tests/trainer/test_numpy.py", "tests/trainer/test_numpy_minibatch_gradients.py",
                                         "tests/trainer/test_bookkeeping.py",
                                         "tests/trainer/test_async.py", "tests/trainer/test_protocol.py",
                                         # the trainer's team (masks, world state, team returns) and prio paths
                                         "tests/trainer/test_teams.py::"
                                         "test_masks_and_world_state_reach_the_rollout_and_the_update",
                                         "tests/trainer/test_teams.py::"
                                         "test_smax_agents_take_only_the_actions_its_batch_says_are_available",
                                         "tests/trainer/test_teams.py::"
                                         "test_a_competitive_scenario_logs_each_teams_return",
                                         "tests/trainer/test_teams.py::"
                                         "test_a_cooperative_scenario_logs_no_team_column",
                                         "tests/trainer/test_priority.py::"
                                         "test_prio_alpha_zero_trains_bit_for_bit_as_a_plain_shuffle",
                                         "tests/trainer/test_priority.py::"
                                         "test_numpy_trainer_trains_on_the_prioritised_draws_and_weights"],
    "fastvec/trainer/config.py": ["tests/trainer/test_config.py", "tests/trainer/test_config_relations.py",
                                  "tests/trainer/test_override_args.py", "tests/trainer/test_selfplay_policy_inputs.py"],
    "fastvec/trainer/checkpoint.py": ["tests/trainer/test_rollout_and_checkpoint_edges.py",
                                      "tests/trainer/test_checkpoint_format.py", "tests/trainer/test_numpy.py"],
    "fastvec/wrappers/gymnasium.py": ["tests/wrappers/test_seed_lists.py", "tests/wrappers/test_env_inputs.py",
                                      "tests/wrappers/test_render_and_kwargs.py",
                                      _CONTRACTS, "tests/native/test_autoreset.py", "tests/native/test_rules.py",
                                      "tests/native/test_cartpole.py", "tests/native/test_pong.py",
                                      "-k", _NOT_SLOW + " and not pygame"],
    "fastvec/wrappers/pettingzoo.py": ["tests/wrappers/test_multi_agent_vector_episode_ends.py",
                                       "tests/wrappers/test_multi_agent_vector_copies.py",
                                       "tests/wrappers/test_pettingzoo.py", "tests/wrappers/test_env_inputs.py",
                                       "tests/wrappers/test_multi_agent_vector_two_value_actions.py",
                                       _CONTRACTS, "-k", _NOT_SLOW],
    "fastvec/wrappers/sb3.py": ["tests/wrappers/test_sb3_reset_options.py", "tests/wrappers/test_sb3_vec_env_edges.py",
                                "tests/mujoco_cpu/test_faces_sb3_torch.py", *_ADAPTER_TESTS[:-1],
                                _ADAPTER_TESTS[-1] + " and not ppo_runs and not list_of_seeds and not torch_face"],
    "fastvec/wrappers/torch.py": ["tests/wrappers/test_torch_face_actions.py",
                                  "tests/native/test_gpu_stream_order_edges.py::"
                                  "test_torch_face_orders_only_a_side_stream_after_the_envs", *_ADAPTER_TESTS],
    "fastvec/native/batch.h": ["tests/native/test_autoreset.py", "tests/native/test_cpu_batch_inputs.py",
                               "tests/native/test_rules.py", "tests/native/test_cartpole.py",
                               "tests/native/test_cpu_speed_paths.py", "tests/native/test_space_defaults.py",
                               _CONTRACTS,
                               "tests/smax/test_smax_env.py::"
                               "test_a_reset_refreshes_the_masks_and_world_state_of_exactly_the_reset_envs",
                               "-k", _NOT_SLOW],
    "fastvec/native/cartpole.h": ["tests/native/test_cartpole.py", "tests/native/test_cartpole_float32.py",
                                  "tests/native/test_rules.py", "tests/native/test_cpu_speed_paths.py",
                                  "tests/native/test_classic_control_oracle.py", "-k", _NOT_SLOW],
    "fastvec/native/glibc_math.h": ["tests/native/test_glibc_math.py", "tests/native/test_cpu_speed_paths.py",
                                    "tests/native/test_classic_control_oracle.py", "-k", _NOT_SLOW],
    "fastvec/native/math32.h": ["tests/native/test_math32.py", "tests/native/test_cartpole_float32.py",
                                "tests/native/test_acrobot_float32.py"],
    "fastvec/native/breakout.h": ["tests/native/test_breakout.py", "tests/native/test_rules.py",
                                  "tests/native/test_breakout_paddle_edges.py", "tests/native/test_breakout_space_bounds.py",
                                  "tests/native/test_breakout_contact_instants.py", "-k", _NOT_SLOW],
    "fastvec/native/pong.h": ["tests/native/test_pong.py", "tests/native/test_rules.py",
                               "tests/native/test_pong_rule_edges.py",
                               # the per-game bot levels of a BOT_LEVEL=-1 build, through selfplay.cu's CPU build
                               "tests/emulation/test_selfplay_kernels.py::test_scores_equal_the_cpu_games",
                               "-k", _NOT_SLOW],
    # The CUDA step kernels, built for the CPU by the emulation harness and checked against the CPU batch.
    "fastvec/native/batch_gpu.h": ["tests/emulation/test_env_step_kernels.py", "tests/emulation/test_spaces_kernels.py"],
    "fastvec/native/slots_gpu.h": ["tests/emulation/test_env_step_kernels.py", "tests/emulation/test_spaces_kernels.py"],
    "fastvec/native/random_gpu.h": ["tests/emulation/test_env_step_kernels.py",
                                    "tests/emulation/test_spaces_kernels.py", "-k",
                                    "not spaces_kernels or fused or random_policy"],
    # The rest of the package (the whole-package campaign): each file's fastest tests that reach it.
    "fastvec/__init__.py": ["tests/test_gymnasium_registration.py", "tests/wrappers/test_render_and_kwargs.py",
                            "tests/wrappers/test_env_inputs.py",
                            "tests/native/test_classic_control_oracle.py", "-k", _NOT_SLOW + " and not pygame"],
    "fastvec/pettingzoo.py": ["tests/wrappers/test_face_boundaries.py", "tests/wrappers/test_pettingzoo.py",
                              "-k", "pettingzoo_faces_names or registered"],
    "fastvec/native/__init__.py": ["tests/native/test_registry_parameters.py", "tests/native/test_rules.py",
                                   "tests/native/test_cpu_batch_inputs.py", "tests/native/test_spaces.py",
                                   "tests/trainer/test_display.py", "tests/native/test_classic_control_state_edges.py",
                                   "-k", "registry_parameters or defaults or refused or wrap or declares or "
                                   "list_shows or misspelt or frame_rate"],
    "fastvec/native/backend.py": ["tests/native/test_backend_signatures_and_descriptions.py",
                                  "tests/native/test_backend.py"],
    "fastvec/native/batches.py": ["tests/native/test_backend.py", "tests/native/test_user_env.py",
                                  "tests/trainer/test_teams.py", "-k", _NOT_SLOW + " and not smax_trains"],
    "fastvec/native/build_cache.py": ["tests/native/test_build_cache_records.py", "tests/native/test_build_cache.py",
                                      "tests/native/test_env_file_inputs.py", "-k", "not eight_processes and not "
                                      "nvcc and not cuda and not cubin and not compile_error and not fastvec_train"],
    "fastvec/native/cpu.py": ["tests/native/test_cpu_backend_helpers.py", "tests/native/test_cpu_batch_inputs.py",
                              "tests/native/test_compile_error_locations.py",
                              "tests/native/test_autoreset.py", "tests/native/test_backend.py",
                              "tests/native/test_spaces.py", "tests/wrappers/test_face_inputs.py",
                              "tests/native/test_busy_cpu.py::test_thread_count_default_and_override",
                              "tests/native/test_default_threads.py",
                              "tests/native/test_env_file_inputs.py::"
                              "test_an_edited_env_file_loads_its_new_build_in_the_same_process"],
    "fastvec/native/env_file.py": ["tests/native/test_env_file_inputs.py", "tests/native/test_user_env.py",
                                   "-k", _NOT_SLOW],
    "fastvec/native/gym_batch.py": ["tests/trainer/test_open_trainer.py", "tests/trainer/test_gym_batch_seed_messages.py",
                                    "-k", "gym_batch or gymnasium_ids"],
    "fastvec/native/mpe.py": ["tests/mpe/test_mpe_keyword_signatures.py", "tests/mpe/test_mpe_faces.py", "-k",
                              "keywords or agents_and_spaces or agent_names or found_by_name"],
    "fastvec/native/smax.py": ["tests/smax/test_smax_env.py", "tests/trainer/test_cli_output.py", "-k",
                               "not gpu_env_module"],
    "fastvec/native/spaces.py": ["tests/native/test_backend_signatures_and_descriptions.py",
                                 "tests/native/test_spaces.py", "tests/wrappers/test_spaces_faces.py",
                                 "tests/native/test_obs_shape_edges.py", "tests/native/test_declared_sizes.py",
                                 "tests/native/test_box_description_matches_declared_space.py", "-k", "not sb3_ppo"],
    "fastvec/native/fastvec.h": ["tests/native/test_rng_streams.py", "tests/native/test_rules.py",
                                 "tests/native/test_autoreset.py", "tests/native/test_spaces.py",
                                 "tests/native/test_fill_rect_clipping.py", "-k", _NOT_SLOW],
    "fastvec/native/spaces.h": ["tests/native/test_spaces.py", "tests/native/test_space_defaults.py",
                                "tests/wrappers/test_face_inputs.py",
                                "tests/wrappers/test_spaces_faces.py", "-k", "not sb3_ppo"],
    "fastvec/native/pool.h": ["tests/native/test_cpu_speed_paths.py", "tests/native/test_pool_choice.py",
                              "tests/native/test_pool_chunks.py", "tests/native/test_pool_timing_mean.py",
                              "tests/native/test_pool_job_kinds.py",
                              "tests/native/test_busy_cpu.py", "tests/native/test_autoreset.py", "-k", _NOT_SLOW],
    "fastvec/native/glibc_exp.h": ["tests/mpe/test_mpe_math.py", "tests/mpe/test_mpe_oracle.py",
                                   "-k", "softplus or exp_and or spread-discrete"],
    "fastvec/native/acrobot.h": ["tests/native/test_classic_control_state_edges.py",
                                 "tests/native/test_classic_control_oracle.py",
                                 "tests/native/test_acrobot_float32.py", "tests/native/test_acrobot_frame_geometry.py",
                                 "-k", "acrobot"],
    **{f"fastvec/native/{name}.h": ["tests/native/test_classic_control_state_edges.py",
                                    "tests/native/test_classic_control_oracle.py",
                                    "tests/native/test_classic_control_float32.py",
                                    "tests/native/test_mountaincar_continuous_float32_steps.py",
                                    "tests/native/test_cpu_speed_paths.py", "-k",
                                    "(mountaincar or mountain_car) and not for_the_gpu"]
       for name in ("mountaincar", "mountaincar_common", "mountaincar_continuous")},
    "fastvec/native/pendulum.h": ["tests/native/test_classic_control_state_edges.py",
                                  "tests/native/test_classic_control_oracle.py", "tests/native/test_spaces.py",
                                  "tests/native/test_classic_control_float32.py",
                                  "-k", "(pendulum or box) and not for_the_gpu"],
    **{f"fastvec/native/minatar_{game}.h": ["tests/native/test_minatar_score_stat.py",
                                            "tests/native/test_minatar_oracle.py", "-k",
                                            f"({game.replace('_', ' and ')}) or shipped_builds"]
       for game in ("breakout", "freeway", "asterix", "space_invaders", "seaquest")},
    "fastvec/native/minatar_common.h": ["tests/native/test_minatar_score_stat.py",
                                        "tests/native/test_minatar_oracle.py", "tests/native/test_rng_streams.py"],
    **{f"fastvec/native/mpe_{name}.h": ["tests/mpe/test_mpe_oracle.py", "tests/mpe/test_mpe_faces.py",
                                        "tests/mpe/test_mpe_set_state_goal_edges.py", "-k",
                                        f"simple_{scenario} and (scenario_matches_mpe2 and not parallel_env "
                                        "or agents_and_spaces or set_state or without_warnings)"]
       for name, scenario in (("spread", "spread"), ("tag", "tag"), ("adversary", "adversary"), ("push", "push"),
                              ("speaker_listener", "speaker"), ("reference", "reference"),
                              ("crypto", "crypto"), ("world_comm", "world"))},
    "fastvec/native/mpe_common.h": ["tests/mpe/test_mpe_math.py", "tests/mpe/test_mpe_oracle.py",
                                    "tests/mpe/test_mpe_movable_entities.py",
                                    "tests/mpe/test_mpe_signed_zero_actions.py",
                                    "tests/mpe/test_mpe_faces.py::test_agents_and_spaces_are_mpe2s", "-k",
                                    "not parallel_env and not keywords and not world and not reference"],
    "fastvec/native/smax.h": ["tests/smax/test_smax_env.py", "tests/smax/test_smax_oracle.py",
                              "tests/smax/test_smax_heuristic_choices.py", "tests/smax/test_smax_every_unit_type.py",
                              "tests/smax/test_smax_observation_features.py", "tests/smax/test_smax_heuristic_memory.py",
                              "-k", "not gpu_env_module"],
    "fastvec/native/smax_units.h": ["tests/smax/test_smax_units.py"],
    **{f"fastvec/native/mujoco/{name}.c": ["tests/mujoco_cpu/test_task_resets_and_model_checks.py",
                                           "tests/mujoco_cpu/test_exactness.py", "tests/mujoco_cpu/test_mujoco_edges.py",
                                           "tests/mujoco_cpu/test_mujoco_rule_edges.py",
                                           "tests/mujoco_cpu/test_reset_noise_every_coordinate.py", "-k", task]
       for name, task in (("ant", "Ant"), ("half_cheetah", "HalfCheetah"), ("hopper", "Hopper"),
                          ("humanoid", "Humanoid and not Standup"), ("humanoid_standup", "HumanoidStandup"),
                          ("inverted_double_pendulum", "InvertedDoublePendulum"),
                          ("inverted_pendulum", "InvertedPendulum"), ("pusher", "Pusher"), ("reacher", "Reacher"),
                          ("swimmer", "Swimmer"), ("walker2d", "Walker2d"))},
    "fastvec/native/mujoco/mj_task.h": ["tests/mujoco_cpu/test_task_resets_and_model_checks.py",
                                        "tests/mujoco_cpu/test_exactness.py", "tests/mujoco_cpu/test_user_task.py",
                                        "tests/mujoco_cpu/test_reset_noise_every_coordinate.py",
                                        "tests/mujoco_cpu/test_user_task_observation_helper.py",
                                        "-k",
                                        "reset_infos or random_actions or user_task or keywords or without_warnings"
                                        " or pairwise or fast_states or noise_draws or noise_moves"],
    "fastvec/native/mujoco/mj_batch.c": ["tests/mujoco_cpu/test_face.py", "tests/mujoco_cpu/test_exactness.py",
                                         "tests/mujoco_cpu/test_mujoco_edges.py", "tests/mujoco_cpu/test_mujoco_rule_edges.py",
                                         "-k", "not random_actions and not scripted"],
    "fastvec/native/mujoco/__init__.py": ["tests/mujoco_cpu/test_task_resets_and_model_checks.py",
                                          "tests/mujoco_cpu/test_without_mujoco.py",
                                          "tests/mujoco_cpu/test_face.py", "tests/mujoco_cpu/test_user_task.py",
                                          "tests/mujoco_cpu/test_exactness.py", "-k",
                                          "not random_actions and not scripted"],
    # MuJoCo Warp's batch: its agreement and return tests need the mujoco_warp package (they skip without it); the
    # task files' view of Warp's arrays is also built by the host's compiler here (a build check, not a rule check).
    "fastvec/native/mujoco/warp_batch.py": ["tests/mujoco_gpu/test_agreement.py", "tests/mujoco_gpu/test_returns.py"],
    "fastvec/native/mujoco/warp_cuda.py": ["tests/mujoco_gpu/test_gpu_wiring.py",
                                           "tests/mujoco_gpu/test_gpu_emulated.py",
                                           "tests/mujoco_gpu/test_gpu_copies.py"],
    **{f"fastvec/native/mujoco/{name}": ["tests/mujoco_gpu/test_view_builds.py", "tests/mujoco_gpu/test_agreement.py",
                                         "tests/mujoco_gpu/test_returns.py", "tests/mujoco_gpu/test_view_edges.py",
                                         "tests/mujoco_gpu/test_view_probe_pose.py", "-k", "not nvcc"]
       for name in ("mj_view.cu", "mj_view.h")},
    "fastvec/native/mujoco/host_batch.py": ["tests/mujoco_cpu/test_task_resets_and_model_checks.py",
                                            "tests/mujoco_cpu/test_train.py", "tests/mujoco_cpu/test_mujoco_edges.py",
                                            "-k", "host_batch or frame"],
    "fastvec/wrappers/inputs.py": ["tests/wrappers/test_face_inputs.py", "tests/wrappers/test_env_inputs.py",
                                   _CONTRACTS, "tests/wrappers/test_render_and_kwargs.py",
                                   "-k", _NOT_SLOW + " and not human and not torchrl and not pygame"],
    "fastvec/wrappers/mpe.py": ["tests/mpe/test_mpe_keyword_signatures.py", "tests/mpe/test_mpe_faces.py"],
    "fastvec/wrappers/mujoco.py": ["tests/mujoco_cpu/test_task_resets_and_model_checks.py", "tests/mujoco_cpu/test_face.py",
                                   "tests/mujoco_cpu/test_faces_sb3_torch.py", "tests/mujoco_cpu/test_render.py",
                                   "tests/mujoco_cpu/test_user_task.py", "tests/mujoco_cpu/test_face_render_fps.py",
                                   "tests/mujoco_cpu/test_single_env_unstable.py", "tests/mujoco_cpu/test_unseeded_resets.py",
                                   "-k", "not sb3_ppo and not user_task_steps and not user_task_file_errors"],
    "fastvec/wrappers/render.py": ["tests/wrappers/test_render_and_kwargs.py", "tests/wrappers/test_pettingzoo.py",
                                   "-k", "render"],
    "fastvec/wrappers/smax.py": ["tests/smax/test_smax_faces.py", "-k", "not gpu"],
    "fastvec/wrappers/spaces.py": ["tests/wrappers/test_spaces_faces.py", "tests/wrappers/test_face_inputs.py",
                                   "tests/wrappers/test_env_inputs.py", "-k", "not sb3_ppo and not "
                                   "compiles_for_the_gpu and not env_sources_compile_as_cuda"],
    "fastvec/trainer/cli.py": ["tests/trainer/test_cli.py", "tests/trainer/test_cli_output.py",
                               "tests/trainer/test_display.py", "-k",
                               "not eval_plays_one and not dashboard and not panel and not notebook and not redraw "
                               "and not piped"],
    "fastvec/trainer/config_keys.py": ["tests/trainer/test_config.py", "tests/trainer/test_config_relations.py",
                                       "tests/trainer/test_env_defaults.py"],
    "fastvec/trainer/config_text.py": ["tests/trainer/test_config.py", "tests/trainer/test_config_relations.py",
                                       "tests/trainer/test_run_config_sections.py", "tests/trainer/test_activation.py"],
    "fastvec/trainer/settings.py": ["tests/trainer/test_config_objects_and_gym_limits.py",
                                    "tests/trainer/test_metrics_and_config_round_trips.py",
                                    "tests/trainer/test_config.py", "tests/trainer/test_step_limit.py",
                                    "tests/trainer/test_config_is_frozen.py"],
    "fastvec/trainer/env_defaults.py": ["tests/trainer/test_env_defaults.py", "tests/trainer/test_mujoco_declared.py",
                                        "tests/trainer/test_env_defaults_wrapping.py"],
    "fastvec/trainer/resolve.py": ["tests/trainer/test_resolve_rules.py", "tests/trainer/test_trainer_heads.py",
                                   "tests/trainer/test_step_limit.py",
                                   "tests/trainer/test_env_defaults.py",
                                   "tests/trainer/test_config_objects_and_gym_limits.py",
                                   # cuda_unsupported's rules and the agents a game (Resolved): their tests
                                   "tests/trainer/test_priority.py", "tests/trainer/test_critic.py",
                                   "tests/trainer/test_encoder.py", "tests/trainer/test_activation.py",
                                   "tests/trainer/test_teams.py", "tests/mujoco_gpu/test_train_on_warp.py",
                                   "tests/trainer/test_env_device_choice.py",
                                   "-k", "not learns and not smax_trains"],
    "fastvec/trainer/heads.py": ["tests/trainer/test_policy_inputs_and_modes.py",
                                 "tests/trainer/test_reference_heads.py", "tests/trainer/test_sample_actions_rows.py"],
    "fastvec/trainer/normalize.py": ["tests/trainer/test_reference_heads.py", "tests/trainer/test_bookkeeping.py",
                                     "tests/trainer/test_reward_scaling_edges.py",
                                     "-k", "moments or scaling or normalised or norm_obs"],
    "fastvec/trainer/optimizers.py": ["tests/trainer/test_reference.py", "tests/trainer/test_optimizer_math.py"],
    "fastvec/trainer/loggers.py": ["tests/trainer/test_logger_fanout_and_trial_lines.py",
                                   "tests/trainer/test_loggers.py", "tests/trainer/test_logger_run_dirs.py",
                                   "tests/trainer/test_env_defaults.py", "tests/trainer/test_loop_by_clock.py"],
    "fastvec/trainer/loop.py": ["tests/trainer/test_loop_by_clock.py", "tests/trainer/test_stop_request_rules.py",
                                "tests/trainer/test_target_stop.py",
                                "tests/trainer/test_run_dirs.py", "tests/trainer/test_divergence.py",
                                "tests/trainer/test_loop_summary_edges.py", "tests/trainer/test_loop_log_cadence.py",
                                "-k", "not sweep"],
    "fastvec/trainer/run.py": ["tests/trainer/test_run_paths.py", "tests/trainer/test_evaluation_by_hand.py",
                               "tests/trainer/test_cli.py", "tests/trainer/test_run_closes_batches.py",
                               "tests/trainer/test_blas_thread_limits.py",
                               "tests/trainer/test_trainer_heads.py",
                               "tests/trainer/test_train_keeps_an_existing_run.py",
                               "-k", "not dashboard and not learns and not plot"],
    "fastvec/trainer/run_dir.py": ["tests/trainer/test_run_dirs.py", "tests/trainer/test_reliability.py",
                                   "-k", "not kill_9 and not shipped_configs"],
    "fastvec/trainer/selfplay.py": ["tests/trainer/test_opponent_pool_rules.py", "tests/trainer/test_selfplay.py",
                                    "tests/trainer/test_stream_salts.py",
                                    "tests/trainer/test_selfplay_ratings_and_results.py",
                                    "tests/trainer/test_ratings_plot_bot_labels.py",
                                    "tests/emulation/test_selfplay_kernels.py::"
                                    "test_the_kernels_opponent_draws_are_draw_opponents",
                                    "tests/trainer/test_reliability.py::"
                                    "test_selfplay_ratings_resume_at_the_checkpoint_and_a_damaged_file_starts_over",
                                    "tests/trainer/test_cli_output.py"],
    "fastvec/trainer/sweep.py": ["tests/trainer/test_sweep_trial_reports.py", "tests/trainer/test_sweep.py",
                                 "tests/trainer/test_divergence.py"],
    "fastvec/trainer/sweep_space.py": ["tests/trainer/test_sweep.py", "-k", "search_space or bad or command_line"],
    "fastvec/trainer/sweep_report.py": ["tests/trainer/test_sweep_plots.py",
                                        "tests/trainer/test_logger_fanout_and_trial_lines.py",
                                        "tests/trainer/test_sweep.py", "tests/trainer/test_display.py",
                                        "tests/trainer/test_sweep_progress_lines.py",
                                        "-k", "trial or real_sweep or sweep_status or sweep_plots or progress_lines"],
    "fastvec/trainer/target.py": ["tests/trainer/test_target_stop.py"],
    "fastvec/trainer/protocol.py": ["tests/trainer/test_protocol.py"],
    "fastvec/trainer/agent_inputs.py": ["tests/trainer/test_teams.py", "tests/emulation/test_team_inputs_grid.py",
                                        "-k", "not learns and not trains"],
    "fastvec/trainer/teams.py": ["tests/trainer/test_teams.py", "-k", "not learns and not trains"],
    "fastvec/trainer/streams.py": ["tests/trainer/test_counter_streams.py", "tests/trainer/test_reference.py",
                                   "tests/trainer/test_reference_heads.py", "tests/trainer/test_stream_salts.py"],
    "fastvec/trainer/priority.py": ["tests/trainer/test_priority.py", "tests/emulation/test_prio_kernel.py"],
    "fastvec/trainer/dashboard.py": ["tests/trainer/test_display.py", "tests/trainer/test_notebook_view.py",
                                     "tests/trainer/test_dashboard_time_row.py"],
    "fastvec/trainer/plot.py": ["tests/trainer/test_metrics_and_config_round_trips.py", "tests/trainer/test_cli.py",
                                "tests/trainer/test_display.py", "-k", "plot or metrics"],
    "fastvec/trainer/distributed.py": ["tests/trainer/test_distributed.py",
                                       "tests/trainer/test_distributed_launch_edges.py",
                                       "tests/trainer/test_cli_output.py"],
    # The CUDA trainer's kernels that the emulation harnesses build for the CPU.
    "fastvec/trainer/cuda/heads.cu": ["tests/emulation/test_heads_kernels.py"],
    "fastvec/trainer/cuda/normalize.cu": ["tests/emulation/test_heads_kernels.py"],
    "fastvec/trainer/cuda/ppo.cu": ["tests/emulation/test_heads_kernels.py", "tests/emulation/test_prio_kernel.py",
                                    "tests/trainer/test_counter_streams.py", "tests/trainer/test_shuffle_kernel_grid.py",
                                    "tests/emulation/test_block_sums_leftovers.py",
                                    "tests/emulation/test_schedule_edges.py",
                                    "tests/emulation/test_gather_kernel_memory.py"],
    "fastvec/trainer/cuda/prio.cu": ["tests/emulation/test_prio_kernel.py", "tests/emulation/test_schedule_edges.py",
                                     "tests/emulation/test_prio_kernel_memory.py"],
    "fastvec/trainer/cuda/newton_schulz.cu": ["tests/emulation/test_newton_schulz.py",
                                              "tests/emulation/test_newton_schulz_widths.py"],
    "fastvec/trainer/cuda/selfplay.cu": ["tests/emulation/test_selfplay_kernels.py",
                                         "tests/emulation/test_selfplay_kernels_memory.py",
                                         "tests/emulation/test_selfplay_kernels_wide.py",
                                         "tests/emulation/test_selfplay_kernels_rows.py"],
    "fastvec/trainer/cuda/rollout_common.cu": ["tests/emulation/test_selfplay_kernels.py",
                                               "tests/emulation/test_selfplay_kernels_memory.py",
                                               "tests/emulation/test_selfplay_kernels_wide.py",
                                               "tests/emulation/test_head_rollout_step.py"],
    "fastvec/trainer/cuda/teams.cu": ["tests/emulation/test_teams_kernels.py",
                                      "tests/emulation/test_teams_kernels_memory.py"],
    "fastvec/trainer/cuda/team_rollout.cu": ["tests/emulation/test_teams_kernels.py",
                                             "tests/emulation/test_team_inputs_grid.py"],
}

# The C files that tests/native/test_sanitizers.py builds with AddressSanitizer and UBSan, and the groups of its
# envs that include each (its test ids): a read or write past an array fails there, whatever the outputs show.
_SANITIZED = {
    **{f"fastvec/native/{name}.h": ["classic", "space_kinds"] for name in ("spaces", "batch", "fastvec")},
    "fastvec/native/pool.h": ["classic"],
    "fastvec/native/glibc_math.h": ["classic"],
    "fastvec/native/math32.h": ["classic_float32"],
    **{f"fastvec/native/{name}.h": ["classic", "classic_float32"] for name in (
        "cartpole", "acrobot", "mountaincar", "mountaincar_common", "mountaincar_continuous", "pendulum")},
    "fastvec/native/breakout.h": ["arcade"],
    "fastvec/native/pong.h": ["arcade"],
    **{f"fastvec/native/minatar_{game}.h": ["minatar"] for game in (
        "common", "breakout", "freeway", "asterix", "space_invaders", "seaquest")},
    **{f"fastvec/native/{name}.h": ["mpe"] for name in (
        "glibc_exp", "mpe_common", "mpe_spread", "mpe_tag", "mpe_adversary", "mpe_push", "mpe_speaker_listener",
        "mpe_reference", "mpe_crypto", "mpe_world_comm")},
    "fastvec/native/smax.h": ["smax"],
    "fastvec/native/smax_units.h": ["smax"],
    **{f"fastvec/native/mujoco/{name}": ["mujoco"] for name in (
        "mj_batch.c", "mj_task.h", "ant.c", "half_cheetah.c", "hopper.c", "humanoid.c", "humanoid_standup.c",
        "inverted_double_pendulum.c", "inverted_pendulum.c", "pusher.c", "reacher.c", "swimmer.c", "walker2d.c")},
}


def with_sanitizer_groups(tests: list[str], groups: list[str]) -> list[str]:
    """tests (pytest arguments) plus test_sanitizers.py's test of `groups` only: its -k joined to theirs."""
    chosen = " or ".join(f"own_memory[{group}]" for group in groups)
    if "-k" not in tests:
        return [*tests, "tests/native/test_sanitizers.py", "-k", f"not own_memory or {chosen}"]
    k = tests.index("-k")
    return [*tests[:k], "tests/native/test_sanitizers.py", "-k", f"(({tests[k + 1]}) and not own_memory) or {chosen}",
            *tests[k + 2:]]


for _rel, _groups in _SANITIZED.items():
    TARGETS[_rel] = with_sanitizer_groups(TARGETS[_rel], _groups)

# Files whose code runs only on a GPU and that no CPU harness builds: their sampled mutants are reported in
# the GPU-only column (the @pytest.mark.gpu tests' business), never dropped.
_GPU = "runs only on a GPU (PyCUDA, the driver API or nvcc), and no CPU harness builds it"
GPU_ONLY: dict[str, str] = {
    **{f"fastvec/native/{name}": _GPU for name in ("cuda.py", "cuda_build.py", "gpu.py", "graphs.py", "device_array.py",
                                                   "game_rows.py", "game_rows.cu", "mujoco/device_batch.py")},
    **{f"fastvec/trainer/cuda/{name}": _GPU for name in (
        "__init__.py", "actors.py", "arena.py", "cublas.py", "data_parallel.py", "device.py", "heads.py",
        "host_envs.py", "device_envs.py",
        "kernel_args.py", "matches.py", "nccl.py", "optimizers.py", "plan.py", "policy.py", "rollouts.py",
        "slots.py", "trainer.py", "update.py", "categorical.cu", "common.cu", "kernels.cu", "optimizers.cu",
        "policy.cu", "rollout.cu", "update_args.cu")},
}
C_SOURCES = (".h", ".c", ".cu")
# Files that every CPU build compiles with the host's compiler alone (no CPU harness defines __CUDACC__ for
# them): the lines of their `#ifdef __CUDACC__` branches run only where nvcc built them, on a GPU.
NVCC_BRANCHES: dict[str, str] = {
    f"fastvec/native/mujoco/{name}": "an #ifdef __CUDACC__ branch of a file the CPU builds with the host's compiler "
    "alone (every CPU test takes the #else branch); the MuJoCo Warp GPU tests of the task views stand guard over it"
    for name in ("mj_view.cu", "mj_view.h")}

# cosmic-ray operators kept: the slips a developer makes (an off-by-one comparison, a flipped sign, a
# wrong constant, an inverted condition), not every operator pair (Add -> BitXor is noise, killed by
# any test that runs the line at all).
PY_OPERATORS = {
    *(f"core/ReplaceBinaryOperator_{a}_{b}" for a, b in [
        ("Add", "Sub"), ("Sub", "Add"), ("Mult", "Div"), ("Div", "Mult"), ("FloorDiv", "Div"), ("Mod", "FloorDiv"),
        ("Pow", "Mult"), ("BitAnd", "BitOr"), ("BitOr", "BitAnd"), ("BitXor", "BitOr"), ("LShift", "RShift"),
        ("RShift", "LShift")]),
    *(f"core/ReplaceComparisonOperator_{a}_{b}" for a, b in [
        ("Lt", "LtE"), ("LtE", "Lt"), ("Gt", "GtE"), ("GtE", "Gt"), ("Eq", "NotEq"), ("NotEq", "Eq"),
        ("Lt", "Gt"), ("Gt", "Lt"), ("Is", "IsNot"), ("IsNot", "Is"), ("In", "NotIn"), ("NotIn", "In")]),
    "core/ReplaceUnaryOperator_USub_UAdd", "core/ReplaceUnaryOperator_Delete_Not", "core/AddNot",
    "core/ReplaceTrueWithFalse", "core/ReplaceFalseWithTrue", "core/ReplaceAndWithOr", "core/ReplaceOrWithAnd",
    "core/ReplaceBreakWithContinue", "core/ReplaceContinueWithBreak", "core/NumberReplacer",
    "core/ZeroIterationForLoop",
}


@dataclass
class Mutant:
    file: str  # repository-relative
    line: int  # 1-based
    source: str  # the original line, stripped: with `change` and `index`, the mutant's identity
    change: str  # e.g. "< -> <=" or cosmic-ray's operator name
    index: int  # which same-`change` site on that line
    spec: dict = field(default_factory=dict)  # how to apply it (cosmic-ray MutationSpec fields, or C offsets)
    occurrence: int = 0  # which line of the file with this same text (0: the first)
    outcome: str = ""  # killed | timeout | survived | error | equivalent | gpu-only | unreachable | skipped
    reason: str = ""
    seconds: float = 0.0

    def key(self) -> tuple:
        return (self.file, self.source, self.change, self.index, self.occurrence)


def _line_occurrences(lines: list[str]) -> list[int]:
    """For each line, how many earlier lines have the same stripped text (so identical lines stay apart)."""
    seen: dict[str, int] = {}
    out = []
    for line in lines:
        out.append(seen.get(line.strip(), 0))
        seen[line.strip()] = out[-1] + 1
    return out


# ---------------------------------------------------------------------------------------- C mutants

_C_TOKEN = re.compile(r"""
    (?P<num>(?<![\w.])(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?[fFuUlL]*(?![\w.]))
  | (?P<op>&&|\|\||<<=|>>=|<<|>>|<=|>=|==|!=|->|\+\+|--|\+=|-=|\*=|/=|[-+*/<>])
""", re.VERBOSE)
_C_SWAP = {"+": "-", "-": "+", "*": "/", "/": "*", "+=": "-=", "-=": "+=", "*=": "/=", "/=": "*=",
           "<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==", "&&": "||", "||": "&&"}
# Functions left out of the C campaign: pixels of render frames (colours, digit glyphs), checked by the
# render tests' shapes and a few pixels rather than rule by rule.
_C_SKIP_FUNCTION = re.compile(r"^FV_FN\b.*\b\w*(render|draw|digit)\w*\s*\(")


def _mask_comments_and_strings(text: str) -> str:
    """The text with comments, string literals and launch bounds blanked (newlines and offsets kept)."""
    out = list(text)
    # __launch_bounds__(threads, blocks) too: an occupancy hint, never a change of results.
    for m in re.finditer(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])'|__launch_bounds__\([^)]*\)",
                         text, re.DOTALL):
        for i in range(m.start(), m.end()):
            if out[i] != "\n":
                out[i] = " "
    return "".join(out)


def _cuda_branch_lines(lines: list[str]) -> set[int]:
    """0-based lines inside a branch that only a compiler defining __CUDACC__ compiles (an `#ifdef __CUDACC__`
    branch, or the `#else` of an `#ifndef __CUDACC__`)."""
    inside: set[int] = set()
    frames: list[list[bool]] = []  # per open #if: [tests __CUDACC__, current branch compiled only by nvcc]
    for i, line in enumerate(lines):
        stripped = line.strip()
        directive = stripped.split()[0] if stripped.startswith("#") else ""
        if directive in ("#if", "#ifdef", "#ifndef"):
            about_cuda = "__CUDACC__" in stripped
            negated = directive == "#ifndef" or "!" in stripped
            frames.append([about_cuda, about_cuda and not negated])
        elif directive == "#else" and frames and frames[-1][0]:
            frames[-1][1] = not frames[-1][1]
        elif directive == "#endif" and frames:
            frames.pop()
        if any(frame[1] for frame in frames):
            inside.add(i)
    return inside


def _skipped_lines(masked: str, cuda_code: bool) -> set[int]:
    """0-based lines of preprocessor conditionals/includes and of render/draw functions, and unless cuda_code,
    of `#ifdef __CUDACC__` blocks (never compiled for the CPU; batch_gpu.h's campaign covers the kernels)."""
    lines = masked.split("\n")
    skip: set[int] = set() if cuda_code else _cuda_branch_lines(lines)
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith("#") and not stripped.startswith("#define"):
            skip.add(i)
        if _C_SKIP_FUNCTION.match(stripped):
            depth, started, j = 0, False, i
            while j < len(lines):
                depth += lines[j].count("{") - lines[j].count("}")
                started |= "{" in lines[j]
                skip.add(j)
                if started and depth <= 0:
                    break
                j += 1
            i = j
        i += 1
    return skip


def nvcc_only(m: Mutant, text: str) -> bool:
    """Whether m's line lies in a `__CUDACC__` branch of a file that every CPU build compiles without it."""
    return m.file in NVCC_BRANCHES and m.line - 1 in _cuda_branch_lines(_mask_comments_and_strings(text).split("\n"))


def in_nvcc_branch(m: Mutant, root: Path) -> bool:
    """nvcc_only for m's file in the tree at `root`, read only where the file is one of NVCC_BRANCHES."""
    path = root / m.file
    return m.file in NVCC_BRANCHES and path.is_file() and nvcc_only(m, path.read_text())


def _number_variants(token: str) -> list[str]:
    m = re.fullmatch(r"(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?([fFuUlL]*)", token)
    body, exponent, suffix = m.group(1), m.group(2) or "", m.group(3)
    if "." in body or exponent:
        value = float(body + exponent)
        return [("1.0" if value == 0 else repr(value * 1.5)) + suffix]
    value = int(body)
    return [str(value + 1) + suffix] + ([str(value - 1) + suffix] if value > 0 else [])


def c_mutants(rel: str, text: str) -> list[Mutant]:
    """Operator, comparison, logical, unary-minus and constant mutations of one C header."""
    masked = _mask_comments_and_strings(text)
    skip = _skipped_lines(masked, cuda_code=rel.endswith(("_gpu.h", ".cu")))
    lines = text.split("\n")
    occurrences = _line_occurrences(lines)
    line_starts = [0]
    for line in lines:
        line_starts.append(line_starts[-1] + len(line) + 1)
    found: list[Mutant] = []
    seen: dict[tuple, int] = {}
    for m in _C_TOKEN.finditer(masked):
        start, end, token = m.start(), m.end(), m.group()
        lineno = next(i for i in range(len(lines)) if line_starts[i + 1] > start)
        if lineno in skip:
            continue
        line_text = masked[line_starts[lineno]:line_starts[lineno + 1] - 1]
        if line_text.strip().startswith("#define"):
            name_end = re.match(r"\s*#define\s+\w+", line_text).end()
            if start - line_starts[lineno] < name_end or m.group("op"):
                continue  # only the constants of a #define's value
        before = masked[start - 1] if start else " "
        after = masked[end] if end < len(masked) else " "
        replacements: list[str] = []
        if m.group("num"):
            replacements = _number_variants(token)
        elif token in _C_SWAP and before.isspace() and after.isspace():
            replacements = [_C_SWAP[token]]  # spaced: a binary operator, not a pointer or #include <...>
        elif token == "-" and not after.isspace():
            prev = masked[:start].rstrip()[-1:]
            if prev in "(=,?:" or masked[:start].rstrip().endswith("return"):
                replacements = [""]  # unary minus dropped
        for new in replacements:
            change = f"{token} -> {new or '(removed)'}"
            source = lines[lineno].strip()
            index = seen.get((lineno, change), 0)
            seen[(lineno, change)] = index + 1
            found.append(Mutant(rel, lineno + 1, source, change, index, {"start": start, "end": end, "new": new},
                                occurrence=occurrences[lineno]))
    return found


def apply_c(path: Path, original: str, spec: dict) -> None:
    path.write_text(original[:spec["start"]] + spec["new"] + original[spec["end"]:])


# ----------------------------------------------------------------------------------- Python mutants


def py_mutants(rel: str, path: Path) -> list[Mutant]:
    """cosmic-ray's work items for one module (the operators in PY_OPERATORS)."""
    from cosmic_ray.commands.init import _all_work_items

    text = path.read_text()
    lines = text.split("\n")
    lazy = _lazy_annotation_spans(text)
    occurrences = _line_occurrences(lines)
    found: list[Mutant] = []
    seen: dict[tuple, int] = {}
    for item in _all_work_items([path], {}):
        spec = item.mutations[0]
        if spec.operator_name not in PY_OPERATORS or any(a <= tuple(spec.start_pos) < b for a, b in lazy):
            continue
        lineno = spec.start_pos[0]
        index = seen.get((lineno, spec.operator_name), 0)
        seen[(lineno, spec.operator_name)] = index + 1
        found.append(Mutant(rel, lineno, lines[lineno - 1].strip(), spec.operator_name, index,
                            {"operator": spec.operator_name, "occurrence": spec.occurrence},
                            occurrence=occurrences[lineno - 1]))
    return found


def _lazy_annotation_spans(text: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where the annotations of a module with `from __future__ import annotations` are: never evaluated, so a
    mutant inside one (`int | None` -> `int & None`) is equivalent by construction and is not generated."""
    tree = ast.parse(text)
    if not any(isinstance(node, ast.ImportFrom) and node.module == "__future__" and
               any(alias.name == "annotations" for alias in node.names) for node in tree.body):
        return []
    spans = []
    for node in ast.walk(tree):
        for annotation in (getattr(node, "annotation", None), getattr(node, "returns", None)):
            if isinstance(annotation, ast.expr):
                spans.append(((annotation.lineno, annotation.col_offset),
                              (annotation.end_lineno, annotation.end_col_offset)))
    return spans


def apply_py(path: Path, spec: dict) -> bool:
    import cosmic_ray.plugins
    from cosmic_ray.mutating import apply_mutation

    operator = cosmic_ray.plugins.get_operator(spec["operator"])()
    _, mutated = apply_mutation(path, operator, spec["occurrence"])
    return mutated is not None


def apply_mutant(path: Path, original: str, rel: str, spec: dict) -> bool:
    """Write the mutant of `rel` (text `original`) described by spec into `path`; False where cosmic-ray finds none."""
    if rel.endswith(C_SOURCES):
        apply_c(path, original, spec)
        return True
    return apply_py(path, spec)


# ------------------------------------------------------------------------------------------- running


def load_listed() -> dict[tuple, tuple[str, str]]:
    """Mutants listed once with a reason, by identity: (outcome, reason); outcome "equivalent" (no behaviour
    changes), "gpu-only" (the changed code runs only with a GPU: the @gpu tests' business, not the CPU suite's)
    or "unreachable" (a path no test can provoke, e.g. a failed malloc)."""
    data = tomllib.loads(EQUIVALENT_FILE.read_text()) if EQUIVALENT_FILE.exists() else {}
    return {(e["file"], e["source"], e["change"], e.get("index", 0), e.get("occurrence", 0)):
            (table.replace("_", "-"), e["reason"])
            for table in ("equivalent", "gpu_only", "unreachable") for e in data.get(table, [])}


def run_tests(clone: Path, args: list[str], timeout: float, first_failure: bool = True,
              cache: Path | None = None) -> tuple[str, str]:
    """('passed' | 'failed' | 'timeout', output tail) of the fast tests in `clone`, building into `cache` (the
    clone's own by default). The clone goes first on any PYTHONPATH already set (a staged site's, for one)."""
    path = os.pathsep.join(p for p in (str(clone), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, PYTHONPATH=path, PYTHONDONTWRITEBYTECODE="1",
               FASTVEC_CACHE_DIR=str(cache or clone / ".mutation-cache"))
    cmd = [sys.executable, "-m", "pytest", *(["-x"] if first_failure else []), "-q", "-p", "no:cacheprovider",
           "-W", "ignore", "-rfs", *args]
    proc = subprocess.Popen(cmd, cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, text=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        return "timeout", ""
    # 5: pytest collected nothing (a test module that skips at import): no failure, and baseline() then finds no
    # "N passed" and reports the file's tests as skipping here
    return ("passed" if proc.returncode in (0, 5) else "failed"), out if not first_failure else out[-2000:]


def record_outcome(m: Mutant, status: str, out: str) -> None:
    """m's outcome from run_tests' answer (a failure or the time limit kills it), the first failing test its reason."""
    m.outcome = {"failed": "killed", "timeout": "timeout", "passed": "survived"}[status]
    failed = [line for line in out.splitlines() if line.startswith(("FAILED", "ERROR"))]
    m.reason = failed[0][:200] if failed else ""  # the test that caught it


class TreePool:
    """Copies of the repository shared by the threads that test mutants, one mutant in a copy at a time."""

    def __init__(self, trees: list[Path]):
        self.free, self.lock = list(trees), threading.Lock()

    @contextlib.contextmanager
    def holding(self, m: Mutant):
        """A free copy, m's file in it and that file's text: (copy, path, original). On leaving, the file is
        written back and the copy freed whatever happened, and m.seconds is the time taken."""
        with self.lock:
            tree = self.free.pop()
        path = tree / m.file
        original = path.read_text()
        t0 = time.perf_counter()
        try:
            yield tree, path, original
        finally:
            path.write_text(original)
            m.seconds = time.perf_counter() - t0
            with self.lock:
                self.free.append(tree)


def snapshot(source: str, dest: Path) -> str:
    """Clone the committed HEAD of `source` into `dest`; returns its commit (the measured one)."""
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", source, str(dest)], check=True)
    return subprocess.run(["git", "-C", str(dest), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()


# Libraries beyond fastvec's own dependencies that .ci/run installs and whose tests skip without them (importorskip)
CI_TEST_LIBRARIES = ("mujoco", "torch", "stable_baselines3", "mpe2", "supersuit", "minatar")


def missing_test_libraries() -> list[str]:
    """The CI_TEST_LIBRARIES this Python cannot import (found without importing them)."""
    import importlib.util

    return [name for name in CI_TEST_LIBRARIES if importlib.util.find_spec(name) is None]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default=str(REPO), help="repository to snapshot (its committed HEAD)")
    parser.add_argument("--files", nargs="*", default=[*TARGETS, *GPU_ONLY], help="repository-relative files to mutate")
    parser.add_argument("--per-file", type=int, default=20, help="mutants sampled per file (0: all)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed")
    parser.add_argument("--at-least", type=int, default=0, help="top the sample up to this many mutants that the CPU "
                        "tests run, drawn uniformly from the rest of the package")
    parser.add_argument("--jobs", type=int, default=2, help="clones tested in parallel")
    parser.add_argument("--only-survivors", help="re-run just the survivors listed in this earlier JSON report")
    parser.add_argument("--json", default="benchmarks/results/mutation.json", help="report file (repo-relative)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary clones")
    parser.add_argument("--baseline-only", action="store_true", help="only time each file's unmutated tests "
                        "(aim for 30 s or less a file: a mutant's limit is 3x that + 30 s)")
    parser.add_argument("--report", nargs="+", help="print the table of earlier JSON reports (with today's listed "
                        "mutants); a later report's outcome (e.g. an --only-survivors re-run) replaces an earlier one's")
    args = parser.parse_args(argv)
    if args.report:
        listed = load_listed()
        merged: dict[tuple, Mutant] = {}
        for report in args.report:
            seen: dict[tuple, int] = {}  # reports from before `occurrence` existed may repeat a key
            for m in json.loads(Path(report).read_text())["mutants"]:
                mutant = Mutant(**{k: v for k, v in m.items() if k != "key"})
                nth = seen[mutant.key()] = seen.get(mutant.key(), -1) + 1
                merged[(*mutant.key(), nth)] = mutant
        mutants = list(merged.values())
        # A GPU-only listing is no excuse once the GPU half has run the mutant; a time-out of a mutant shown
        # equivalent was the machine's load, not a kill.
        for m in mutants:
            if (m.key() in listed and m.outcome in ("survived", "error", "timeout")
                    and listed[m.key()][0] != "gpu-only"):
                m.outcome, m.reason = listed[m.key()]
        print_table(mutants)
        return 0

    missing = missing_test_libraries()
    if missing:
        print(f"warning: {', '.join(missing)} not importable here: the tests that need them skip, so mutants they "
              "would kill may survive; CI installs them (run under .ci/run's venv for a score comparable with CI's)",
              flush=True)
    unknown = [f for f in args.files if f not in TARGETS and f not in GPU_ONLY]
    if unknown:
        parser.error(f"no fast tests known for {unknown}; add the file and its tests to TARGETS (or, for code "
                     f"that runs only on a GPU with no CPU harness, to GPU_ONLY) in {__file__}")
    workdir = Path(tempfile.mkdtemp(prefix="mut-"))
    clones = [workdir / f"w{k}" for k in range(max(args.jobs, 1))]
    commit = snapshot(args.source, clones[0])
    for clone in clones[1:]:
        snapshot(str(clones[0]), clone)
    print(f"snapshot {commit[:12]} of {args.source} in {workdir}", flush=True)

    listed = load_listed()
    wanted = None
    if args.only_survivors:
        earlier = json.loads(Path(args.only_survivors).read_text())
        wanted = {Mutant(**{k: v for k, v in m.items() if k != "key"}).key() for m in earlier["mutants"]
                  if m["outcome"] in ("survived", "error")}
        args.files = [f for f in args.files if any(key[0] == f for key in wanted)]  # baselines of these only

    # Baseline: each distinct test selection must pass unmutated (tests already failing in the snapshot are
    # deselected and reported); its time sets its mutants' time limit. Selections run once each, in parallel.
    tested = [rel for rel in args.files if rel in TARGETS]
    selections = list(dict.fromkeys(tuple(TARGETS[rel]) for rel in tested))
    free_clones = list(clones)
    clone_lock = threading.Lock()

    def baseline(selection: tuple) -> tuple[list[str] | None, float, list[str], str]:
        with clone_lock:
            clone = free_clones.pop()
        try:
            tests, failing = list(selection), []
            t0 = time.perf_counter()
            status, out = run_tests(clone, tests, 1800)
            if status == "failed":
                _, full = run_tests(clone, tests, 1800, first_failure=False)
                failing = re.findall(r"^FAILED (.+?)(?: - .*)?$", full, re.MULTILINE)
                tests += [f"--deselect={test}" for test in failing]
                t0 = time.perf_counter()
                status, out = run_tests(clone, tests, 1800)
            seconds = time.perf_counter() - t0
            if status == "passed" and not re.search(r"\b\d+ passed\b", out):
                status = "skipped"  # every test skipped here (an optional package missing): nothing stands guard
            print(f"  baseline {seconds:6.1f} s {status:7s} {' '.join(selection)[:150]}", flush=True)
            return (tests if status in ("passed", "skipped") else None), seconds, failing, out if status != \
                "skipped" else "every test of the selection skips here" + "".join(
                    f"; {why}" for why in sorted(set(re.findall(r"^SKIPPED \[\d+\] [^:]+:\d+: (.*)$", out, re.M))))
        finally:
            with clone_lock:
                free_clones.append(clone)

    limits: dict[str, float] = {}
    broken: dict[str, list[str]] = {}
    skipped: dict[str, str] = {}  # files whose tests all skip on this machine: their mutants are not run
    with concurrent.futures.ThreadPoolExecutor(len(clones)) as pool:
        results = dict(zip(selections, pool.map(baseline, selections)))
    for rel in tested:
        tests, seconds, failing, out = results[tuple(TARGETS[rel])]
        if failing:
            broken[rel] = failing
            print(f"{rel}: deselected, failing before any mutation: {failing}", flush=True)
        if tests is None:
            print(f"{rel}: left out, its tests fail before any mutation (fix them first):\n{out}", file=sys.stderr)
            args.files.remove(rel)
            continue
        TARGETS[rel] = tests
        if out.startswith("every test of the selection skips here"):
            skipped[rel] = out
            print(f"{rel}: {out}", flush=True)
        limits[rel] = 3 * seconds + 30
        print(f"baseline {rel}: {seconds:.1f} s, mutant limit {limits[rel]:.0f} s", flush=True)
    if args.baseline_only:
        shutil.rmtree(workdir, ignore_errors=True)
        return 0

    def label(m: Mutant) -> Mutant:
        if m.key() in listed:
            m.outcome, m.reason = listed[m.key()]
        elif m.file in GPU_ONLY:
            m.outcome, m.reason = "gpu-only", GPU_ONLY[m.file]
        elif in_nvcc_branch(m, clones[0]):
            m.outcome, m.reason = "gpu-only", NVCC_BRANCHES[m.file]
        elif m.file in skipped:
            m.outcome, m.reason = "skipped", skipped[m.file]
        return m

    mutants: list[Mutant] = []
    rest: list[Mutant] = []  # the mutants the per-file sample left out, for --at-least
    for rel in args.files:
        path = clones[0] / rel
        found = c_mutants(rel, path.read_text()) if rel.endswith(C_SOURCES) else py_mutants(rel, path)
        if wanted is not None:
            found = [m for m in found if m.key() in wanted]
        elif args.per_file and len(found) > args.per_file:
            chosen = random.Random(f"{args.seed}:{rel}").sample(range(len(found)), args.per_file)
            rest += [m for i, m in enumerate(found) if i not in chosen]
            found = [found[i] for i in chosen]
        mutants += sorted(found, key=lambda m: (m.line, m.change, m.index))
    mutants = [label(m) for m in mutants]
    # --at-least N: top the sample up to N mutants the CPU tests run, drawn uniformly from the rest of the
    # package's (a fixed rule, so the sample stays random, whatever the outcomes).
    short = args.at_least - sum(not m.outcome for m in mutants)
    if short > 0 and wanted is None:
        pool = [m for m in (label(m) for m in rest) if not m.outcome]
        extra = random.Random(f"{args.seed}:at-least").sample(pool, min(short, len(pool)))
        print(f"{len(extra)} more mutants drawn from the whole package to reach {args.at_least}", flush=True)
        mutants += sorted(extra, key=lambda m: (m.file, m.line, m.change, m.index))

    trees = TreePool(clones)

    def test_one(m: Mutant) -> Mutant:
        with trees.holding(m) as (clone, path, original):
            if not apply_mutant(path, original, m.file, m.spec):
                m.outcome, m.reason = "error", "cosmic-ray found no such mutation"
            else:
                record_outcome(m, *run_tests(clone, TARGETS[m.file], limits[m.file]))
        return m

    todo = [m for m in mutants if not m.outcome]
    print(f"{len(mutants)} mutants, {len(todo)} to test ({len(mutants) - len(todo)} listed in {EQUIVALENT_FILE.name}, "
          "in a GPU-only file, or of a file whose tests skip here)", flush=True)
    with concurrent.futures.ThreadPoolExecutor(len(clones)) as pool:
        for done, m in enumerate(pool.map(test_one, todo), 1):
            print(f"[{done}/{len(todo)}] {m.outcome:9s} {m.file}:{m.line} {m.change}  `{m.source[:70]}`",
                  flush=True)

    report = {"commit": commit, "source": args.source, "per_file": args.per_file, "seed": args.seed,
              "at_least": args.at_least,
              "deselected_failing_before_mutation": broken, "tests_skip_here": skipped,
              "test_libraries_missing": missing,
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "mutants": [{**asdict(m), "key": list(m.key())} for m in mutants]}
    out_path = REPO / args.json
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(report, indent=1) + "\n")
    print_table(mutants)
    print(f"report: {out_path}")
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def print_table(mutants: list[Mutant]) -> None:
    """Per file: killed (a test failed, or the time limit hit), survived, the listed ones, the GPU-only ones
    (listed, or in a GPU_ONLY file), those not run because the file's tests all skip on this machine, and the
    score: killed / (killed + survived)."""
    print("\n| file | mutants | killed | survived | equivalent | unreachable | GPU-only | tests skip here | score |\n"
          "|---|---|---|---|---|---|---|---|---|")
    files = list(dict.fromkeys(m.file for m in mutants))
    for f in [*files, None]:
        group = [m for m in mutants if f is None or m.file == f]
        k = sum(m.outcome in ("killed", "timeout") for m in group)
        s = sum(m.outcome in ("survived", "error") for m in group)
        listed = " | ".join(str(sum(m.outcome == kind for m in group))
                            for kind in ("equivalent", "unreachable", "gpu-only", "skipped"))
        score = f"{100 * k / (k + s):.1f}%" if k + s else "-"
        print(f"| {f'`{f}`' if f else '**all**'} | {len(group)} | {k} | {s} | {listed} | {score} |")
    survivors = [m for m in mutants if m.outcome in ("survived", "error")]
    if survivors:
        print("\nsurvivors:")
        for m in survivors:
            print(f"  {m.file}:{m.line} {m.change} [{m.index}] `{m.source}`")


if __name__ == "__main__":
    sys.exit(main())
