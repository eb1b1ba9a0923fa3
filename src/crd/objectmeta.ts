// The ObjectMeta round trip of a custom resource's metadata (what strict decoding into
// metav1.ObjectMeta drops), and ObjectMeta validation (apimachinery pkg/api/validation/objectmeta.go, as
// the CRD registry calls it with NameIsDNSSubdomain), messages from pkg/api/validate/content
// and pkg/util/validation. Checks that depend on what the API server itself fills in before a
// webhook runs (a missing name or namespace, resourceVersion on update) are left out by default:
// a hand-written object for an offline review lacks them without being wrong.
import { KEPT_FIELD_ERRORS } from '../field/error-cap.ts';
import { appendAll } from './append.ts';
import { OMIT_VALUE, type FieldError } from '../field/errors.ts';
import { RE2JS } from 're2js';
import { semanticEqual, toBigInt, kindOf, ownKeys, setOwn } from './values.ts';
import { isObject, type JsonObject } from '../json/object.ts';

export interface ObjectMetaOptions {
  namespaced: boolean;
  /** Also report a missing name/namespace (create) and resourceVersion (update), as the API server would. */
  requireServerFields?: boolean;
}

const origin = 'objectmeta';

function invalid(field: string, value: unknown, detail: string): FieldError {
  return { type: 'FieldValueInvalid', field, value, detail, origin };
}

const re = (p: string): ((s: string) => boolean) => {
  const compiled = RE2JS.compile(`^(?:${p})$`);
  return (s) => compiled.test(s);
};

const byteLength = (s: string): number => Buffer.byteLength(s, 'utf8');

function regexError(msg: string, regex: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${regex}')`;
  let out = `${msg} (e.g. `;
  examples.forEach((e, i) => {
    if (i > 0) out += ' or ';
    out += `'${e}', `;
  });
  return `${out}regex used for validation is '${regex}')`;
}

const DNS1123_LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_SUBDOMAIN = `${DNS1123_LABEL}(\\.${DNS1123_LABEL})*`;
const isLabelFmt = re(DNS1123_LABEL);
const isSubdomainFmt = re(DNS1123_SUBDOMAIN);
const LABEL_KEY = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const LABEL_VALUE = `(${LABEL_KEY})?`;
const isLabelKeyFmt = re(LABEL_KEY);
const isLabelValueFmt = re(LABEL_VALUE);
const LABEL_KEY_MSG =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";

/** util/validation.IsDNS1123Subdomain ("characters"); content's variant says "bytes". */
function dns1123Subdomain(value: string, unit: 'characters' | 'bytes'): string[] {
  const errs: string[] = [];
  if (byteLength(value) > 253) errs.push(`must be no more than 253 ${unit}`);
  if (!isSubdomainFmt(value)) errs.push(regexError(SUBDOMAIN_MSG, DNS1123_SUBDOMAIN, 'example.com'));
  return errs;
}

function dns1123Label(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > 63) errs.push('must be no more than 63 characters');
  if (!isLabelFmt(value))
    errs.push(
      isSubdomainFmt(value) ? 'must not contain dots' : regexError(LABEL_MSG, DNS1123_LABEL, 'my-name', '123-abc'),
    );
  return errs;
}

const DNS1035_LABEL = '[a-z]([-a-z0-9]*[a-z0-9])?';
const isDns1035Fmt = re(DNS1035_LABEL);

/** util/validation.IsDNS1035Label. */
export function dns1035LabelErrors(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > 63) errs.push('must be no more than 63 characters');
  if (!isDns1035Fmt(value)) {
    errs.push(
      regexError(
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
        DNS1035_LABEL,
        'my-name',
        'abc-123',
      ),
    );
  }
  return errs;
}

/** content.IsLabelKey (IsQualifiedName). */
export function qualifiedNameErrors(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) name = parts[0];
  else if (parts.length === 2) {
    const prefix = parts[0];
    name = parts[1];
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else
      appendAll(
        errs,
        dns1123Subdomain(prefix, 'bytes').map((m) => `prefix part ${m}`),
      );
  } else {
    return [
      `a valid label key ${regexError(LABEL_KEY_MSG, LABEL_KEY, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (byteLength(name) > 63) errs.push('name part must be no more than 63 bytes');
  if (!isLabelKeyFmt(name))
    errs.push(`name part ${regexError(LABEL_KEY_MSG, LABEL_KEY, 'MyName', 'my.name', '123-abc')}`);
  return errs;
}

function labelValueErrors(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > 63) errs.push('must be no more than 63 bytes');
  if (!isLabelValueFmt(value)) {
    errs.push(
      regexError(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        LABEL_VALUE,
        'MyValue',
        'my_value',
        '12345',
      ),
    );
  }
  return errs;
}

/** NameIsDNSSubdomain with maskTrailingDash for generateName prefixes. */
function nameErrors(name: string, prefix: boolean): string[] {
  const masked = prefix && name.length > 1 && name.endsWith('-') ? `${name.slice(0, -2)}a` : name;
  return dns1123Subdomain(masked, 'characters');
}

const str = (m: JsonObject, k: string): string => (typeof m[k] === 'string' ? (m[k] as string) : '');
const stringMap = (v: unknown): Array<[string, string]> =>
  isObject(v) ? Object.entries(v).filter((e): e is [string, string] => typeof e[1] === 'string') : [];

function labelErrors(labels: unknown, base: string): FieldError[] {
  const errs: FieldError[] = [];
  for (const [k, v] of stringMap(labels)) {
    // Bounded like every error list (field/error-cap.ts): 100,000 bad keys would keep as many.
    if (errs.length >= KEPT_FIELD_ERRORS) break;
    for (const m of qualifiedNameErrors(k)) errs.push(invalid(`${base}.labels`, k, m));
    for (const m of labelValueErrors(v)) errs.push(invalid(`${base}.labels`, v, m));
  }
  return errs;
}

function annotationErrors(annotations: unknown, base: string): FieldError[] {
  const errs: FieldError[] = [];
  let size = 0;
  for (const [k, v] of stringMap(annotations)) {
    if (errs.length < KEPT_FIELD_ERRORS)
      for (const m of qualifiedNameErrors(k.toLowerCase())) errs.push(invalid(`${base}.annotations`, k, m));
    size += byteLength(k) + byteLength(v);
  }
  if (size > 256 * 1024)
    errs.push({
      type: 'FieldValueTooLong',
      field: `${base}.annotations`,
      value: OMIT_VALUE,
      detail: `may not be more than ${256 * 1024} bytes`,
      origin,
    });
  return errs;
}

function ownerReferenceErrors(refs: unknown, base: string): FieldError[] {
  if (!Array.isArray(refs)) return [];
  const errs: FieldError[] = [];
  let firstController = '';
  for (const ref of refs) {
    if (!isObject(ref)) continue;
    const apiVersion = str(ref, 'apiVersion');
    const kind = str(ref, 'kind');
    const version = apiVersion.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : apiVersion;
    if (version === '')
      errs.push(invalid(`${base}.ownerReferences.apiVersion`, apiVersion, 'version must not be empty'));
    if (kind === '') errs.push(invalid(`${base}.ownerReferences.kind`, kind, 'must not be empty'));
    if (str(ref, 'name') === '') errs.push(invalid(`${base}.ownerReferences.name`, '', 'must not be empty'));
    if (str(ref, 'uid') === '') errs.push(invalid(`${base}.ownerReferences.uid`, '', 'must not be empty'));
    if (apiVersion === 'v1' && kind === 'Event')
      errs.push(invalid(`${base}.ownerReferences`, ref, '/v1, Kind=Event is disallowed from being an owner'));
    if (ref.controller === true) {
      const current = `${kind}/${str(ref, 'name')}`;
      if (firstController !== '') {
        errs.push(
          invalid(
            `${base}.ownerReferences`,
            refs,
            `Only one reference can have Controller set to true. Found "true" in references for ${firstController} and ${current}`,
          ),
        );
      } else firstController = current;
    }
  }
  return errs;
}

function finalizerErrors(finalizers: unknown, base: string): FieldError[] {
  if (!Array.isArray(finalizers)) return [];
  const list = finalizers.filter((f): f is string => typeof f === 'string');
  const errs: FieldError[] = [];
  for (const f of list) for (const m of qualifiedNameErrors(f)) errs.push(invalid(`${base}.finalizers`, f, m));
  if (list.includes('orphan') && list.includes('foregroundDeletion')) {
    errs.push(invalid(`${base}.finalizers`, list, 'finalizer orphan and foregroundDeletion cannot be both set'));
  }
  return errs;
}

function generationOf(meta: JsonObject): bigint {
  return kindOf(meta.generation) === 'int' ? toBigInt(meta.generation) : 0n;
}

function generationValue(meta: JsonObject): unknown {
  return kindOf(meta.generation) === 'int' ? meta.generation : 0;
}

function metaOf(obj: unknown): JsonObject {
  return isObject(obj) && isObject(obj.metadata) ? obj.metadata : {};
}

/** path.ValidatePathSegmentName: the name rule for embedded resources' metadata. */
export function pathSegmentNameErrors(name: string, prefix: boolean): string[] {
  if (!prefix && (name === '.' || name === '..')) return [`may not be '${name}'`];
  return ['/', '%'].filter((c) => name.includes(c)).map((c) => `may not contain '${c}'`);
}

type NameFn = (name: string, prefix: boolean) => string[];

/** ValidateObjectMetaAccessor on a metadata object at `base`, with the resource's name rule. */
export function validateMetadataAt(
  meta: JsonObject,
  base: string,
  nameFn: NameFn,
  requiresNamespace: boolean,
  options: { namespaced: boolean; requireServerFields?: boolean },
): FieldError[] {
  const errs: FieldError[] = [];
  const generateName = str(meta, 'generateName');
  if (generateName !== '')
    for (const m of nameFn(generateName, true)) errs.push(invalid(`${base}.generateName`, generateName, m));
  const name = str(meta, 'name');
  if (name === '') {
    if (options.requireServerFields)
      errs.push({
        type: 'FieldValueRequired',
        field: `${base}.name`,
        value: OMIT_VALUE,
        detail: 'name or generateName is required',
        origin,
      });
  } else for (const m of nameFn(name, false)) errs.push(invalid(`${base}.name`, name, m));
  const namespace = str(meta, 'namespace');
  if (requiresNamespace) {
    if (namespace === '') {
      if (options.requireServerFields)
        errs.push({ type: 'FieldValueRequired', field: `${base}.namespace`, value: OMIT_VALUE, detail: '', origin });
    } else for (const m of dns1123Label(namespace)) errs.push(invalid(`${base}.namespace`, namespace, m));
  } else if (namespace !== '') {
    errs.push({
      type: 'FieldValueForbidden',
      field: `${base}.namespace`,
      value: OMIT_VALUE,
      detail: 'not allowed on this type',
      origin,
    });
  }
  if (generationOf(meta) < 0n)
    errs.push(invalid(`${base}.generation`, generationValue(meta), 'must be greater than or equal to 0'));
  appendAll(errs, labelErrors(meta.labels, base));
  appendAll(errs, annotationErrors(meta.annotations, base));
  appendAll(errs, ownerReferenceErrors(meta.ownerReferences, base));
  appendAll(errs, finalizerErrors(meta.finalizers, base));
  return errs;
}

/** ValidateObjectMetaAccessor for a CREATE of the resource itself (names are DNS subdomains). */
export function validateObjectMeta(obj: unknown, options: ObjectMetaOptions): FieldError[] {
  return validateMetadataAt(metaOf(obj), 'metadata', nameErrors, options.namespaced, options);
}

function immutable(field: string, newVal: unknown, oldVal: unknown): FieldError[] {
  return semanticEqual(newVal ?? null, oldVal ?? null) ? [] : [invalid(field, newVal ?? null, 'field is immutable')];
}

/** ValidateObjectMetaAccessorUpdate for an UPDATE (names and finalizers are not re-checked). */
export function validateObjectMetaUpdate(newObj: unknown, oldObj: unknown, options: ObjectMetaOptions): FieldError[] {
  const meta = metaOf(newObj);
  const old = metaOf(oldObj);
  const errs: FieldError[] = [];
  if (old.deletionTimestamp !== undefined && old.deletionTimestamp !== null) {
    const oldSet = new Set(Array.isArray(old.finalizers) ? old.finalizers : []);
    const extra = [...new Set(Array.isArray(meta.finalizers) ? meta.finalizers : [])]
      .filter((f) => !oldSet.has(f))
      .map(String)
      .sort();
    if (extra.length > 0) {
      errs.push({
        type: 'FieldValueForbidden',
        field: 'metadata.finalizers',
        value: OMIT_VALUE,
        detail: `no new finalizers can be added if the object is being deleted, found new finalizers []string{${extra.map((f) => JSON.stringify(f)).join(', ')}}`,
        origin,
      });
    }
  }
  if (options.requireServerFields && str(meta, 'resourceVersion') === '')
    errs.push(invalid('metadata.resourceVersion', '', 'must be specified for an update'));
  if (generationOf(meta) < generationOf(old))
    errs.push(invalid('metadata.generation', generationValue(meta), 'must not be decremented'));
  errs.push(
    ...immutable('metadata.name', str(meta, 'name'), str(old, 'name')),
    ...immutable('metadata.namespace', str(meta, 'namespace'), str(old, 'namespace')),
    ...immutable('metadata.uid', str(meta, 'uid'), str(old, 'uid')),
    ...immutable('metadata.creationTimestamp', meta.creationTimestamp, old.creationTimestamp),
    ...immutable('metadata.deletionTimestamp', meta.deletionTimestamp, old.deletionTimestamp),
    ...immutable(
      'metadata.deletionGracePeriodSeconds',
      meta.deletionGracePeriodSeconds,
      old.deletionGracePeriodSeconds,
    ),
    ...labelErrors(meta.labels, 'metadata'),
    ...annotationErrors(meta.annotations, 'metadata'),
    ...ownerReferenceErrors(meta.ownerReferences, 'metadata'),
  );
  return errs;
}

// metav1.ObjectMeta's JSON fields, and those of the structs it nests (strict decoding reports
// anything else as unknown and the ObjectMeta round trip drops it).
const OBJECT_META_FIELDS = new Set([
  'name',
  'generateName',
  'namespace',
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
]);
const OWNER_REFERENCE_FIELDS = new Set(['apiVersion', 'kind', 'name', 'uid', 'controller', 'blockOwnerDeletion']);
const MANAGED_FIELDS_ENTRY_FIELDS = new Set([
  'manager',
  'operation',
  'apiVersion',
  'time',
  'fieldsType',
  'fieldsV1',
  'subresource',
]);

function dropUnknown(o: JsonObject, known: ReadonlySet<string>, prefix: string, out: string[]): void {
  for (const k of ownKeys(o)) {
    if (known.has(k)) continue;
    out.push(`${prefix}.${k}`);
    delete o[k];
  }
}

/** What strict decoding into metav1.ObjectMeta reports as unknown (and the round trip drops). */
export function dropUnknownMetadataFields(meta: JsonObject, prefix: string): string[] {
  const out: string[] = [];
  dropUnknown(meta, OBJECT_META_FIELDS, prefix, out);
  const listFields: Array<[string, ReadonlySet<string>]> = [
    ['ownerReferences', OWNER_REFERENCE_FIELDS],
    ['managedFields', MANAGED_FIELDS_ENTRY_FIELDS],
  ];
  for (const [field, known] of listFields) {
    const list = meta[field];
    if (Array.isArray(list))
      list.forEach((entry, i) => isObject(entry) && dropUnknown(entry, known, `${prefix}.${field}[${i}]`, out));
  }
  return out;
}

/**
 * The ObjectMeta round trip of a resource's `metadata`: unknown fields are dropped and
 * reported (`metadata.foo`), and a missing creationTimestamp comes back as null, as in the
 * objects admission webhooks receive. Type errors inside metadata are left alone.
 */
export function coerceObjectMetaInPlace(obj: unknown): string[] {
  if (!isObject(obj) || !isObject(obj.metadata)) return [];
  const meta = obj.metadata;
  const out = dropUnknownMetadataFields(meta, 'metadata');
  if (!Object.hasOwn(meta, 'creationTimestamp') || meta.creationTimestamp === undefined)
    setOwn(meta, 'creationTimestamp', null);
  return out;
}
