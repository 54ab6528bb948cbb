/** The rate-limit module's front door: per-key request limits leased in blocks from PostgreSQL (limiter.ts). */
export { RateLimiter, type RateDecision } from './limiter.ts';
