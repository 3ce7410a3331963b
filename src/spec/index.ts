export * from './choices.ts';
export * from './enums.ts';
export * from './limits.ts';
export * from './validate-generation.ts';
