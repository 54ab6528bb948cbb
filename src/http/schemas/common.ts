/** Schemas shared by routes: the Error body, pagination, id patterns. Registered as OpenAPI components. */
import { Type, type TSchema } from 'typebox';
import { ID_PATTERNS } from '../../core/ids.ts';
import { LOCALES } from '../../core/i18n/index.ts';

export const ErrorSchema = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.String({ description: 'Machine-readable error code from a closed list.' }),
        message: Type.String({ description: 'Human-readable explanation.' }),
        param: Type.Union([Type.String(), Type.Null()], {
          description: 'The offending field as a dotted path, or null.',
        }),
      },
      { additionalProperties: false },
    ),
  },
  { $id: 'Error', additionalProperties: false, description: 'Body of every non-2xx answer.' },
);

export const PaymentIdParam = Type.Object({ id: Type.String({ pattern: ID_PATTERNS.pay, description: 'Payment id' }) });
export const LinkIdParam = Type.Object({
  id: Type.String({ pattern: ID_PATTERNS.lnk, description: 'Payment link id' }),
});
export const EventIdParam = Type.Object({ id: Type.String({ pattern: ID_PATTERNS.evt, description: 'Event id' }) });

export { Amount, DateTime, Nullable } from '../../core/json-schema.ts';

/** One page of a list (200): `data` in the list's order, and the `next_cursor` to pass as `cursor` (null: last page). */
export const PageOf = (item: TSchema) =>
  Type.Object({ data: Type.Array(item), next_cursor: Type.Union([Type.String(), Type.Null()]) });

/** The optional `locale` of payments, links and subscriptions: checked by the service (400 names the supported tags). */
export const LocaleField = Type.String({
  maxLength: 35,
  description: `The payer's language on the checkout, link pages and emails: a BCP 47 tag from ${LOCALES.join(', ')} (any letter case; answers give the spelling shown). Without it the page follows the payer's browser, else English. Any other tag is 400 \`invalid_request\` with \`param\` \`locale\`.`,
});
