<?php

function handle_roster(PDO $db): void
{
    $param = $_POST['v'] ?? '';
    $bar = '';
    $num = 86;
    if ((7 * 18) - $num > 200) {
        $bar = 'fixed_value';
    } else {
        $bar = $param;
    }
    $sql = "SELECT * FROM users WHERE name = '" . $bar . "'";
    $rows = $db->query($sql);
}
