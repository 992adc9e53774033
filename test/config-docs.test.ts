// Every DBQ_* setting is documented in the README, and configuration is validated at start.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, SETTINGS } from '../src/config.ts';

describe('configuration', () => {
  it('documents every setting in the README table', () => {
    const readme = fs.readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    for (const name of Object.keys(SETTINGS)) expect(readme, name).toContain(`| \`${name}\` |`);
  });

  it('refuses bad values with a message naming the setting', () => {
    expect(() => loadConfig({ DBQ_PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => loadConfig({ DBQ_PORT: 'eighty' })).toThrow(/DBQ_PORT/);
    expect(() => loadConfig({ DBQ_AI_PROVIDER: 'skynet' })).toThrow(/DBQ_AI_PROVIDER/);
    expect(() => loadConfig({ DBQ_DEFAULT_PLAN: 'gold' })).toThrow(/DBQ_DEFAULT_PLAN/);
    expect(() => loadConfig({ DBQ_STORE_URL: 'mysql://x/y' })).toThrow(/DBQ_STORE_URL/);
  });

  it('has working defaults and a frozen result', () => {
    const c = loadConfig({});
    expect(c.port).toBe(8080);
    expect(c.historyDays).toBe(90);
    // A self-hosted single user should not meet the free plan's 60 requests a minute (docs/decisions.md).
    expect(c.defaultPlan).toBe('enterprise');
    expect(loadConfig({ DBQ_DEFAULT_PLAN: 'free' }).defaultPlan).toBe('free');
    expect(c.bodyLimit).toBe(1024 * 1024);
    expect(Object.isFrozen(c)).toBe(true);
  });
});
