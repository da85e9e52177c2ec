import type { FastifyInstance, FastifyReply } from 'fastify';
import type { DataSource } from 'typeorm';
import { agentUsage, echoRange, handoffPatterns, plansPerDay } from '../queries/analytics.query';
import { exportPlanTemplate } from '../queries/plan-export.query';
import { getPlanLineage } from '../queries/plan-lineage.query';
import { listPlans, parsePlanCursor, planStatusFilter } from '../queries/plan-list.query';
import { getPlanView } from '../queries/plan-timeline.query';
import { costUsage } from '../queries/cost-usage.query';
import { BILLING_PROVIDERS, type BillingProvider, parseBillingExport } from '../pricing/billing-export';
import { parseFailOver, reconcileReport } from '../queries/reconcile.query';
import {
  parseCostDimension,
  parseCount,
  parseDateRange,
  parseLimit,
  parseOffset,
  requireId,
} from '../queries/query-args';
import { QueryArgumentError } from '../queries/query-errors';
import { getActivePlan, getPlanHistory } from '../queries/session-plans.query';
import { getStepOutput } from '../queries/step-output.query';
import { TOKEN_DIMENSIONS, TokenDimension, tokenUsage } from '../queries/token-usage.query';
import { getResumePoint } from '../queries/workflow-resume.query';
import { DEFAULT_TOKEN_PAGE } from '../queries/token-pages';
import { readRouteSchemas as S } from './openapi-schemas';

type Q = Record<string, string | undefined>;
type P = Record<string, string>;

/**
 * The read endpoints. Each one calls the same `src/queries` function as the CLI's `--json` and
 * answers its result unchanged, so both give identical JSON. Unknown ids: 404 (NotFoundError);
 * malformed arguments: 400 (QueryArgumentError), both mapped by the server's error handler.
 */
export function registerReadRoutes(app: FastifyInstance, ds: DataSource): void {
  const read = { config: { scope: 'read' } } as const;

  app.get('/v1/plans', { ...read, schema: S.listPlans }, async (req) => {
    const q = req.query as Q;
    const filter = {
      sessionId: q.sessionId === undefined ? undefined : requireId('sessionId', q.sessionId),
      ...(q.status === undefined ? {} : planStatusFilter(q.status, 'status')),
      created: parseDateRange(q.from, q.to),
      agentId: q.agentId === undefined ? undefined : requireId('agentId', q.agentId),
      limit: parseLimit(q.limit),
      offset: parseOffset(q.offset),
      cursor: q.cursor === undefined ? undefined : parsePlanCursor(q.cursor, 'cursor'),
    };
    if (filter.cursor && q.offset !== undefined)
      throw new QueryArgumentError('cursor', 'give cursor or offset, not both');
    return listPlans(ds, filter);
  });

  app.get('/v1/plans/:planId', { ...read, schema: S.planTimeline }, async (req) =>
    getPlanView(ds, requireId('planId', (req.params as P).planId)),
  );

  app.get('/v1/plans/:planId/export', { ...read, schema: S.planExport }, async (req) =>
    exportPlanTemplate(ds, requireId('planId', (req.params as P).planId)),
  );

  app.get('/v1/plans/:planId/lineage', { ...read, schema: S.planLineage }, async (req) =>
    getPlanLineage(ds, requireId('planId', (req.params as P).planId)),
  );

  app.get('/v1/plans/:planId/steps/:step/output', { ...read, schema: S.stepOutput }, async (req, reply) => {
    const params = req.params as P;
    const planId = requireId('planId', params.planId);
    const output = await getStepOutput(ds, planId, requireId('step', params.step));
    if (!wantsText(req.headers.accept)) return output;
    if (output.outputContent === null) {
      return notFound(
        reply,
        `step "${output.stepId}" (#${output.index}) of plan "${planId}" has no stored output (status ${output.status})`,
      );
    }
    // byte for byte: no trailing newline added, UTF-8 as stored
    return reply.type('text/plain; charset=utf-8').send(output.outputContent);
  });

  app.get('/v1/sessions/:sessionId/active', { ...read, schema: S.sessionActive }, async (req) =>
    getActivePlan(ds, requireId('sessionId', (req.params as P).sessionId)),
  );

  app.get('/v1/sessions/:sessionId/history', { ...read, schema: S.sessionHistory }, async (req) => {
    const sessionId = requireId('sessionId', (req.params as P).sessionId);
    return getPlanHistory(ds, sessionId, parseLimit((req.query as Q).limit, 10));
  });

  app.get('/v1/workflows/:planId/resume-point', { ...read, schema: S.resumePoint }, async (req) =>
    getResumePoint(ds, requireId('planId', (req.params as P).planId)),
  );

  app.get('/v1/analytics/:report', { ...read, schema: S.analytics }, async (req, reply) => {
    const q = req.query as Q;
    const range = parseDateRange(q.from, q.to);
    switch ((req.params as P).report) {
      case 'daily':
        return { ...echoRange(range), days: await plansPerDay(ds, range) };
      case 'agents':
        return { ...echoRange(range), agents: await agentUsage(ds, range) };
      case 'handoffs':
        return { ...echoRange(range), handoffs: await handoffPatterns(ds, range) };
      case 'tokens': {
        const dims = q.by === undefined ? TOKEN_DIMENSIONS : [parseDimension(q.by)];
        const pages = { limit: parseCount('limit', q.limit, { min: 1, max: 1000, default: DEFAULT_TOKEN_PAGE }) };
        return {
          ...echoRange(range),
          ...(await tokenUsage(ds, range, dims, { ...pages, ...(q.cursor === undefined ? {} : { cursor: q.cursor }) })),
        };
      }
      case 'cost':
        return { ...echoRange(range), ...(await costUsage(ds, range, parseCostDimension(q.by ?? 'model', 'by'))) };
      default:
        return notFound(
          reply,
          `no analytics report "${(req.params as P).report}"; reports: daily, agents, handoffs, tokens, cost`,
        );
    }
  });

  // The export is the body, read as text by the same parser as the CLI's files: JSON pages (one,
  // an array, or JSON Lines) or CSV. Read-only: nothing is stored.
  app.register(async (scope) => {
    scope.removeContentTypeParser(['application/json', 'text/plain']);
    scope.addContentTypeParser(
      ['application/json', 'application/x-ndjson', 'text/csv', 'text/plain'],
      { parseAs: 'string' },
      (_req, body, done) => done(null, body),
    );
    scope.post('/v1/analytics/reconcile', { ...read, schema: S.reconcile }, async (req) => {
      const q = req.query as Q;
      const provider = parseProvider(q.provider);
      const range = parseDateRange(q.from, q.to);
      const failOver = q.failOver === undefined ? undefined : parseFailOver(q.failOver, 'failOver');
      const text = typeof req.body === 'string' ? req.body : '';
      return reconcileReport(ds, provider, parseBillingExport(provider, 'the body', text), range, failOver);
    });
  });
}

function parseProvider(raw: string | undefined): BillingProvider {
  const value = (raw ?? '').trim().toLowerCase();
  if (!(BILLING_PROVIDERS as readonly string[]).includes(value))
    throw new QueryArgumentError('provider', `"${raw ?? ''}" is not one of ${BILLING_PROVIDERS.join(', ')}`);
  return value as BillingProvider;
}

function wantsText(accept: string | undefined): boolean {
  return typeof accept === 'string' && /\btext\/plain\b/i.test(accept) && !/\bapplication\/json\b/i.test(accept);
}

function notFound(reply: FastifyReply, message: string): FastifyReply {
  return reply.code(404).send({ error: message });
}

function parseDimension(raw: string): TokenDimension {
  const value = raw.trim().toLowerCase();
  if (!(TOKEN_DIMENSIONS as readonly string[]).includes(value))
    throw new QueryArgumentError('by', `"${raw}" is not one of ${TOKEN_DIMENSIONS.join(', ')}`);
  return value as TokenDimension;
}
