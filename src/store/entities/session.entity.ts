import { defineEntity, ext, ts } from './define-entity';

/** A chat session; its plans hang off it. */
export interface SessionRow {
  id: string;
  createdAt: Date;
  updatedAt: Date;
}

export const SessionEntity = defineEntity<SessionRow>('Session', 'sessions', {
  id: ext('id', { primary: true }),
  createdAt: ts('created_at'),
  updatedAt: ts('updated_at'),
});
