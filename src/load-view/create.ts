/** Builds the load view a validated `loadView` option stands for, loading its optional package. */
import type { TargetSpec } from "../types.js";
import { EngineLoadView } from "./engine.js";
import { loadPrometheusParser } from "./engine-metrics.js";
import type { LoadViewConfig } from "./options.js";
import { RedisLoadView, loadRedisClient } from "./redis.js";
import type { LoadView, LoadViewHost } from "./view.js";

/** @internal The view for `config`; throws `ERR_MISSING_PEER` when its package is absent. */
export async function createLoadView<T extends TargetSpec>(config: LoadViewConfig<T>, host: LoadViewHost): Promise<LoadView<T>> {
  switch (config.source) {
    case "custom":
      return config.view;
    case "engine":
      return new EngineLoadView<T>(config, host, await loadPrometheusParser());
    case "redis":
      return new RedisLoadView<T>(config, host, await loadRedisClient());
  }
}
