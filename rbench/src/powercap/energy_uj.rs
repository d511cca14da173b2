//! The text of an energy_uj file: a decimal count of microjoules.

use crate::error::BadText;

/// Parses the text of an energy_uj file ("123456\n"): digits, then only
/// newlines, spaces or NULs. Values beyond u64 are malformed.
pub fn parse_energy_uj(text: &[u8]) -> Result<u64, BadText> {
    let digits = text.iter().take_while(|b| b.is_ascii_digit()).count();
    let rest_is_blank = text[digits..]
        .iter()
        .all(|&b| matches!(b, b'\n' | b' ' | 0));
    if digits == 0 && rest_is_blank {
        return Err(BadText::Empty);
    }
    let malformed = || BadText::Malformed(String::from_utf8_lossy(text).into_owned());
    if digits == 0 || !rest_is_blank {
        return Err(malformed());
    }
    // ASCII digits only: parse fails only beyond u64
    (std::str::from_utf8(&text[..digits]).ok())
        .and_then(|digits| digits.parse().ok())
        .ok_or_else(malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_energy_text() {
        assert_eq!(parse_energy_uj(b"72834517023\n"), Ok(72_834_517_023));
        assert_eq!(parse_energy_uj(b"0"), Ok(0));
        assert_eq!(parse_energy_uj(b""), Err(BadText::Empty));
        assert_eq!(parse_energy_uj(b"\n"), Err(BadText::Empty));
        assert_eq!(
            parse_energy_uj(b"12a4\n"),
            Err(BadText::Malformed("12a4\n".into()))
        );
        assert_eq!(
            parse_energy_uj(b"-5\n"),
            Err(BadText::Malformed("-5\n".into()))
        );
        assert!(matches!(
            parse_energy_uj(b"99999999999999999999999\n"),
            Err(BadText::Malformed(_))
        )); // > 2^64
        assert_eq!(parse_energy_uj(b"18446744073709551615\n"), Ok(u64::MAX));
    }

    mod properties {
        use super::super::*;
        use crate::testutil::fixed_cases;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(fixed_cases(3000))]

            /// What the kernel writes ("%llu\n"), with any blank tail, reads back.
            #[test]
            fn a_written_value_reads_back(value: u64, tail in "[\n \u{0}]{0,3}") {
                let text = format!("{value}{tail}");
                prop_assert_eq!(parse_energy_uj(text.as_bytes()), Ok(value));
            }

            /// Any bytes: a value only for digits and a blank tail, else an
            /// error that says which (never a panic, never a wrong value).
            #[test]
            fn any_bytes_are_a_value_or_an_error(bytes in proptest::collection::vec(any::<u8>(), 0..32)) {
                let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
                let blank_tail = bytes[digits..].iter().all(|b| matches!(b, b'\n' | b' ' | 0));
                match parse_energy_uj(&bytes) {
                    Ok(value) => {
                        prop_assert!(digits > 0 && blank_tail);
                        let text = std::str::from_utf8(&bytes[..digits]).unwrap();
                        prop_assert_eq!(text.parse::<u64>().ok(), Some(value));
                    }
                    Err(BadText::Empty) => prop_assert!(digits == 0 && blank_tail),
                    Err(BadText::Malformed(_)) => prop_assert!(
                        digits == 0 || !blank_tail
                            || std::str::from_utf8(&bytes[..digits]).unwrap().parse::<u64>().is_err()
                    ),
                }
            }
        }
    }
}
