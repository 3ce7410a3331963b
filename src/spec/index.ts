export * from './choices.ts';
export * from './details.ts';
export * from './enums.ts';
export * from './files.ts';
export * from './legacy.ts';
export * from './limits.ts';
export * from './rate-limit.ts';
export * from './validate-generation.ts';
