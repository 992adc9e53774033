// What each plan may do per window. The plan rides on the principal, which authentication
// reads from the store on every request, so `dbq workspace set-plan` applies to the next
// request in every process without any cache to flush.
import type { Plan } from '../workspaces/workspaces.ts';

/** The sliding window every limit counts over, in seconds. */
export const WINDOW_SECONDS = 60;

/** Requests (API calls and MCP messages) per window; null is unlimited. */
export const PLAN_LIMITS: Readonly<Record<Plan, number | null>> = Object.freeze({
  free: 60,
  professional: 300,
  enterprise: null,
});

/** Failed authentications per client address per window before that address gets 429. */
export const AUTH_FAILURES_PER_WINDOW = 20;
