export * from './choices.ts';
export * from './enums.ts';
export * from './limits.ts';
