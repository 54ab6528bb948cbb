/** Payment links: create, list, read and update (PatchLink). Schemas here feed validation and the OpenAPI document. */
import { Type } from 'typebox';
import { ID_PATTERNS } from '../../core/ids.ts';
import { LINK_KINDS, LINK_LIMITS, SLUG_PATTERN } from '../../modules/links/index.ts';
import type { ApiApp, ApiDeps } from '../api.ts';
import { keyActor } from '../actor.ts';
import { DateTime, LinkIdParam, LocaleField, Nullable } from '../schemas/common.ts';

const L = LINK_LIMITS;
const Cents = (description: string) => Type.Integer({ minimum: L.centsMin, maximum: L.centsMax, description });
const Url = (description: string) => Type.String({ format: 'uri', maxLength: L.urlMax, description });
const Title = Type.String({
  minLength: 1,
  maxLength: L.titleMax,
  description: "Shown on the link page and as the payment's description.",
});
const Description = Type.String({
  maxLength: L.descriptionMax,
  description: 'Shown under the title on the link page.',
});
const MaxUses = Type.Integer({
  minimum: 1,
  maximum: L.maxUsesMax,
  description: 'Payments the link may create (counted when each payment is created).',
});
const Kind = Type.Union(
  LINK_KINDS.map((k) => Type.Literal(k)),
  {
    description:
      '`fixed` price, `open` amount typed by the payer, `tip` preset buttons (and a custom amount), `pos` staff terminal.',
  },
);

export const PaymentLinkSchema = Type.Object(
  {
    id: Type.String({ pattern: ID_PATTERNS.lnk }),
    slug: Type.String({ pattern: SLUG_PATTERN }),
    url: Type.String({ description: 'Public page `{checkout}/l/<slug>`.' }),
    kind: Kind,
    title: Type.String(),
    description: Nullable(Type.String()),
    amount_usd_cents: Nullable(Type.Integer({ description: 'Price of a `fixed` link.' })),
    min_usd_cents: Nullable(Type.Integer({ description: 'Lowest amount a payer may type (null: 100).' })),
    max_usd_cents: Nullable(Type.Integer({ description: 'Highest amount a payer may type (null: 100000000).' })),
    presets_usd_cents: Type.Array(Type.Integer(), { description: 'Buttons of a `tip` link; empty for other kinds.' }),
    collect_email: Type.Boolean({
      description: "The page asks for the payer's email and stores it as `metadata.payer_email`.",
    }),
    success_url: Nullable(Type.String()),
    locale: Type.Optional(
      Type.String({ description: "The payer's language of the page and of its payments; absent when not set." }),
    ),
    max_uses: Nullable(Type.Integer()),
    uses: Type.Integer({ minimum: 0, description: 'Payments created through the link.' }),
    expires_at: Nullable(DateTime()),
    active: Type.Boolean(),
    created_at: DateTime(),
  },
  {
    $id: 'PaymentLink',
    additionalProperties: false,
    description: 'A reusable public page that creates ordinary payments.',
  },
);

export const CreateLinkBody = Type.Object(
  {
    kind: Kind,
    title: Title,
    description: Type.Optional(Description),
    amount_usd_cents: Type.Optional(Cents('Required for `fixed`; not allowed for other kinds.')),
    min_usd_cents: Type.Optional(Cents('Lowest typed amount (`open`, `tip` custom amount, `pos`).')),
    max_usd_cents: Type.Optional(Cents('Highest typed amount; at least `min_usd_cents`.')),
    presets_usd_cents: Type.Optional(
      Type.Array(Cents('One preset.'), {
        maxItems: L.presetsMax,
        description: 'Required for `tip` (1 to 6 distinct amounts within min/max); not allowed for other kinds.',
      }),
    ),
    collect_email: Type.Optional(Type.Boolean({ description: 'Ask the payer for an email (not for `pos`).' })),
    success_url: Type.Optional(Url("Where the payer's browser goes after paying (https on the live API).")),
    locale: Type.Optional(LocaleField),
    max_uses: Type.Optional(MaxUses),
    expires_at: Type.Optional(DateTime('After this the page takes no payment; must be in the future.')),
  },
  { additionalProperties: false },
);

export const PatchLinkBody = Type.Object(
  {
    active: Type.Optional(Type.Boolean({ description: 'false turns the page off (410); true turns it back on.' })),
    title: Type.Optional(Title),
    description: Type.Optional(Nullable(Description)),
    success_url: Type.Optional(Nullable(Url('https on the live API; null removes it.'))),
    max_uses: Type.Optional(Nullable(MaxUses)),
    expires_at: Type.Optional(Nullable(DateTime('Any time; a past time ends the link now. null removes the expiry.'))),
  },
  { additionalProperties: false },
);

const LinkRef = Type.Unsafe({ $ref: 'PaymentLink#' });
const tags = ['Payment links'];

export default async function linkRoutes(app: ApiApp, { kasse }: ApiDeps) {
  app.addSchema(PaymentLinkSchema);

  app.post(
    '/links',
    {
      schema: {
        operationId: 'createLink',
        summary: 'Create a payment link',
        description:
          'Creates a reusable public page at `url`. Cross-field rules (400 `invalid_request`, `param` names the field): `fixed` requires `amount_usd_cents` and refuses min, max and presets; `open`, `tip` and `pos` refuse `amount_usd_cents` and may bound the typed amount with `min_usd_cents` ≤ `max_usd_cents`; `tip` requires 1 to 6 distinct `presets_usd_cents` inside those bounds and only `tip` takes presets; `pos` refuses `collect_email`; `expires_at` must be in the future; `success_url` must be https on the live API. Each payment made through the link has `order_id` `<slug>-<n>` and `metadata.link_id` (and `metadata.payer_email` when `collect_email`).',
        tags,
        body: CreateLinkBody,
        response: { 201: LinkRef },
      },
    },
    async (req, reply) => reply.code(201).send(await kasse.links.create(req.auth, req.body, keyActor(req))),
  );

  app.get(
    '/links',
    {
      schema: {
        operationId: 'listLinks',
        summary: 'List payment links',
        description: 'The links of this mode, newest first, at most 500.',
        tags,
        response: { 200: Type.Object({ data: Type.Array(LinkRef) }) },
      },
    },
    async (req) => kasse.links.list(req.auth),
  );

  app.get(
    '/links/:id',
    {
      schema: {
        operationId: 'getLink',
        summary: 'Get a payment link',
        description: 'The link with its `uses` so far.',
        tags,
        params: LinkIdParam,
        response: { 200: LinkRef },
      },
    },
    async (req) => kasse.links.get(req.auth, req.params.id),
  );

  app.patch(
    '/links/:id',
    {
      schema: {
        operationId: 'updateLink',
        summary: 'Update a payment link',
        description:
          'Changes `active`, `title`, `description`, `success_url`, `max_uses` or `expires_at`; `null` clears a nullable field. Kind and amounts cannot change (create a new link). Lowering `max_uses` to `uses` or below, or moving `expires_at` into the past, ends the link for new payers; payments already created are not affected.',
        tags,
        params: LinkIdParam,
        body: PatchLinkBody,
        response: { 200: LinkRef },
      },
    },
    async (req) => kasse.links.update(req.auth, req.params.id, req.body, keyActor(req)),
  );
}
