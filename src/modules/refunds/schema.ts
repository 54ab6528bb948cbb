/**
 * The Refund object as the API shows it, as a TypeBox schema: the API registers it as an OpenAPI component and answers
 * with it, the renderer is typed by it, and `refund.failed` webhooks carry it as `data`.
 */
import { Type, type Static } from 'typebox';
import { ID_PATTERNS } from '../../core/ids.ts';
import { Amount, DateTime, Enum, Nullable } from '../../core/json-schema.ts';

export const RefundSchema = Type.Object(
  {
    id: Type.String({ description: '`rfd_` + 26 characters.' }),
    payment_id: Type.String({ pattern: ID_PATTERNS.pay }),
    status: Enum(['pending', 'sent', 'failed']),
    destination: Type.String(),
    token: Type.String(),
    amount: Amount('Amount refunded, smallest unit: the confirmed money of the attempt holding it.'),
    amount_display: Type.String(),
    tx_hash: Nullable(Type.String()),
    note: Nullable(Type.String()),
    error: Nullable(
      Type.String({
        description:
          'Why the refund failed (`failed` only; null otherwise). A new refund may be requested after a failed one.',
      }),
    ),
    created_at: DateTime(),
  },
  { $id: 'Refund', additionalProperties: false, description: "A refund of a payment's money." },
);
export type Refund = Static<typeof RefundSchema>;
