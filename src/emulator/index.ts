export { type BuildOptions, buildApp } from './app.ts';
export { type Clock, ManualClock, systemClock } from './clock.ts';
export {
  ConfigError,
  DEFAULT_KEY,
  defaultConfig,
  type EmulatorConfig,
  loadConfigFile,
  resolveConfig,
} from './config.ts';
export { type RunningEmulator, type StartOptions, startEmulator } from './server.ts';
